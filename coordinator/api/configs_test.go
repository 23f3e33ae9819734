package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/keyring/keyringtest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// configBody is a create or update body with data.
func configBody(t *testing.T, name, project string, data map[string][]byte) string {
	t.Helper()
	b, err := json.Marshal(wire.ConfigSpec{Name: name, Project: structs.ProjectID(project), Data: data})
	require.NoError(t, err)
	return string(b)
}

// A config keeps any bytes exactly, binary and empty values too, and is
// shown whole to who may read it; an update makes a new version and the
// same data again none.
func TestConfigStoredExactly(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1 := e.Tokens["u1"]
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	data := map[string][]byte{"bin": all, "empty": {}, "nul.txt": []byte("a\x00b\r\n"), "utf8": []byte("héllo\xff")}
	status, body := do(t, e, u1, "POST", "/v1/configs", configBody(t, "train", "", data))
	require.Equal(t, http.StatusCreated, status, body)
	status, body = do(t, e, u1, "POST", "/v1/configs", configBody(t, "train", "", data))
	require.Equal(t, http.StatusOK, status, "a retried create: %s", body)
	assert.True(t, decode[wire.Config](t, body).Existing)

	status, body = do(t, e, u1, "GET", "/v1/configs/train", "")
	require.Equal(t, http.StatusOK, status, body)
	c := decode[wire.Config](t, body)
	assert.Equal(t, structs.ConfigData(data), c.Data)
	assert.Equal(t, 1, c.Version)
	assert.Equal(t, structs.Scope("user:u1"), c.Owner)

	data["bin"] = []byte{1}
	status, body = do(t, e, u1, "PUT", "/v1/configs/train", configBody(t, "", "", data))
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, 2, decode[wire.Config](t, body).Version)
	status, body = do(t, e, u1, "PUT", "/v1/configs/train", configBody(t, "", "", data))
	require.Equal(t, http.StatusOK, status, body)
	assert.True(t, decode[wire.Config](t, body).Unchanged)
	assert.Equal(t, 2, decode[wire.Config](t, body).Version)

	status, body = do(t, e, u1, "GET", "/v1/configs", "")
	require.Equal(t, http.StatusOK, status)
	l := decode[wire.ConfigList](t, body)
	require.Len(t, l.Configs, 1)
	assert.Nil(t, l.Configs[0].Data, "lists hold no data")
}

// Hostile input is refused, saying what is allowed, and changes nothing.
func TestConfigHostileInput(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1 := e.Tokens["u1"]
	big := map[string][]byte{"a": make([]byte, structs.MaxConfigBytes/2), "b": make([]byte, structs.MaxConfigBytes/2)}
	longKey := strings.Repeat("k", 254)
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/configs", configBody(t, "x", "", big), "config is 1048578 bytes (keys and values): at most 1048576 (1 MiB) is allowed, as in a Kubernetes ConfigMap"},
		{"/v1/secrets", configBody(t, "x", "", big), "as in a Kubernetes Secret"},
		{"/v1/configs", configBody(t, "x", "", map[string][]byte{"a/b": nil}), `config key "a/b" is not allowed: use letters, digits, '-', '_' or '.'`},
		{"/v1/configs", configBody(t, "x", "", map[string][]byte{"..": nil}), `config key ".." is not allowed`},
		{"/v1/configs", configBody(t, "x", "", map[string][]byte{"a=b": nil}), `config key "a=b" is not allowed`},
		{"/v1/configs", configBody(t, "x", "", map[string][]byte{longKey: nil}), "is not allowed: use letters"},
		{"/v1/configs", configBody(t, "x", "", map[string][]byte{"caf\xc3\xa9": nil}), "is not allowed: use letters"},
		{"/v1/configs", configBody(t, "x", "", nil), "config has no keys"},
		{"/v1/configs", configBody(t, "Bad_Name", "", map[string][]byte{"k": nil}), `config name "Bad_Name" is not allowed: use a DNS label`},
		{"/v1/configs", configBody(t, "", "", map[string][]byte{"k": nil}), `config name "" is not allowed`},
		{"/v1/configs", `{"name": "x", "data": {"k": "not base64!"}}`, "illegal base64"},
		{"/v1/configs", `{"name": "x", "data": {"k": "dg=="}, "extra": 1}`, `unknown field "extra"`},
		{"/v1/configs", `[1]`, "not a JSON object"},
		{"/v1/configs", `{"name": "x", "data": {"k": "dg=="}}{}`, "data after the JSON object"},
		{"/v1/configs", `{"name": "x", "project": "nope", "data": {"k": "dg=="}}`, "may not create or change configs and secrets of project:nope"},
		{"/v1/configs?colour=red", configBody(t, "x", "", map[string][]byte{"k": nil}), `query parameter "colour" is not known`},
	} {
		before := e.Store.StateJSON(t)
		status, body := do(t, e, u1, "POST", tc.path, tc.body)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, status, body)
		assert.Contains(t, errMsg(t, body), tc.want)
		assert.Equal(t, before, e.Store.StateJSON(t))
	}
	// A body over the limit is refused before it is read whole.
	huge := `{"name": "x", "data": {"k": "` + strings.Repeat("A", 3<<20) + `"}}`
	status, body := do(t, e, u1, "POST", "/v1/configs", huge)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, errMsg(t, body), "at most 2097152 bytes")
}

// A secret's values are in no listing, no log entry and no snapshot; its
// owner alone sees them, one key at a time, exactly.
func TestSecretNeverInPlain(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	const value = "s3cr3t-value-that-must-not-leak"
	binary := []byte{0, 1, 2, 0xff, 0xfe, 'x'}
	data := map[string][]byte{"token": []byte(value), "blob": binary}
	status, body := do(t, e, e.Tokens["u1"], "POST", "/v1/secrets", configBody(t, "wandb", "perception", data))
	require.Equal(t, http.StatusCreated, status, body)
	assert.False(t, keyringtest.Leaks([]byte(body), value))
	c := decode[wire.Config](t, body)
	assert.Equal(t, []structs.ConfigKey{{Key: "blob", Size: 6}, {Key: "token", Size: len(value)}}, c.Keys)
	assert.Equal(t, "k1", c.SealedWith)
	assert.True(t, strings.HasPrefix(c.Digest, "hmac-sha256:"))

	for _, user := range []structs.UserID{"u1", "m1", "admin"} {
		for _, path := range []string{"/v1/secrets", "/v1/secrets/wandb?project=perception"} {
			status, body := do(t, e, e.Tokens[user], "GET", path, "")
			require.Equal(t, http.StatusOK, status, body)
			assert.False(t, keyringtest.Leaks([]byte(body), value), "%s %s: %s", user, path, body)
			assert.Contains(t, body, "token")
		}
	}
	// A member of the project sees a value; an admin does not.
	status, body = do(t, e, e.Tokens["m1"], "GET", "/v1/secrets/wandb/data/token?project=perception", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, value, string(decode[wire.SecretValue](t, body).Value))
	status, body = do(t, e, e.Tokens["u1"], "GET", "/v1/secrets/wandb/data/blob?project=perception", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, binary, decode[wire.SecretValue](t, body).Value, "binary values exactly")
	status, body = do(t, e, e.Tokens["admin"], "GET", "/v1/secrets/wandb/data/token?project=perception", "")
	assert.Equal(t, http.StatusForbidden, status)
	assert.False(t, keyringtest.Leaks([]byte(body), value))
	status, body = do(t, e, e.Tokens["u1"], "GET", "/v1/secrets/wandb/data/nope?project=perception", "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, errMsg(t, body), `secret wandb has no key "nope": its keys are blob, token`)

	// An update, then a refused update naming a bad key: its message
	// names keys, never values.
	data["token"] = []byte(value + "-2")
	status, body = do(t, e, e.Tokens["u1"], "PUT", "/v1/secrets/wandb?project=perception", configBody(t, "", "", data))
	require.Equal(t, http.StatusOK, status, body)
	status, body = do(t, e, e.Tokens["u1"], "PUT", "/v1/secrets/wandb?project=perception", configBody(t, "", "", map[string][]byte{"bad key": []byte(value)}))
	require.Equal(t, http.StatusBadRequest, status)
	assert.False(t, keyringtest.Leaks([]byte(body), value))

	for i, entry := range e.Store.Log() {
		assert.False(t, keyringtest.Leaks(entry, value), "log entry %d", i+1)
	}
	snap, err := e.Store.FSM.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	assert.Contains(t, sink.String(), `"sealed"`)
	assert.False(t, keyringtest.Leaks(sink.Bytes(), value), "snapshot")
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// A job naming a config that does not exist, or one of a project its
// owner is not in, is refused at submit; a config a job not ended names
// cannot be deleted, the refusal naming the job.
func TestConfigsAtSubmitAndDelete(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1, u2 := e.Tokens["u1"], e.Tokens["u2"]
	job := func(ref string) string {
		return fmt.Sprintf(`{kind: command, name: c, priority: low, command: [sh], resources: {cpu: "1"}, configs: [%s]}`, ref)
	}
	status, body := do(t, e, u1, "POST", "/v1/jobs", job("{config: train, mountPath: /etc/train}"))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, errMsg(t, body), "configs[0]: no config train (looked in user:u1): create it first (coordinator config create train ...)")

	status, body = do(t, e, u1, "POST", "/v1/configs", configBody(t, "train", "perception", map[string][]byte{"lr": []byte("0.1")}))
	require.Equal(t, http.StatusCreated, status, body)
	status, body = do(t, e, u2, "POST", "/v1/jobs", job("{config: perception/train, env: true}"))
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, errMsg(t, body), "config train belongs to project perception, and user u2 is not a member of it")

	status, body = do(t, e, u1, "POST", "/v1/jobs", job("{config: perception/train, env: true}"))
	require.Equal(t, http.StatusCreated, status, body)
	id := decode[wire.SubmitResponse](t, body).JobID
	status, body = do(t, e, u1, "GET", "/v1/configs/train?project=perception", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []structs.JobID{id}, decode[wire.Config](t, body).UsedBy)
	status, body = do(t, e, u1, "DELETE", "/v1/configs/train?project=perception", "")
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, fmt.Sprintf("config train is in use by job %s: cancel them or wait until they end (update it to change it)", id), errMsg(t, body))

	status, _ = do(t, e, u1, "POST", "/v1/jobs/"+string(id)+"/cancel", "")
	require.Equal(t, http.StatusOK, status)
	status, body = do(t, e, u1, "DELETE", "/v1/configs/train?project=perception", "")
	assert.Equal(t, http.StatusNoContent, status, body)
}

// A coordinator without a keyring refuses secrets, saying how to give it
// one.
func TestNoKeyring(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "").WithKeyring(t, nil)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/secrets", configBody(t, "s", "", map[string][]byte{"k": nil})},
		{"PUT", "/v1/secrets/s", configBody(t, "", "", map[string][]byte{"k": nil})},
	} {
		status, body := do(t, e, e.Tokens["u1"], tc.method, tc.path, tc.body)
		assert.Equal(t, http.StatusUnprocessableEntity, status)
		assert.Contains(t, errMsg(t, body), "this coordinator has no keyring, so it keeps no secrets: start every server with --keyring FILE")
	}
}

// After a key is rotated in (first in every server's keyring), rekey
// seals every secret again with it; the old key can then be retired and
// the values read as before.
func TestRekeyAfterRotation(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	const value = "value-under-the-old-key"
	status, body := do(t, e, e.Tokens["u1"], "POST", "/v1/secrets", configBody(t, "wandb", "", map[string][]byte{"token": []byte(value)}))
	require.Equal(t, http.StatusCreated, status, body)

	var old, fresh keyring.File
	require.NoError(t, yaml.Unmarshal(e.KeyringFile, &old))
	k2, err := keyring.Generate("k2")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(k2, &fresh))
	both, err := yaml.Marshal(keyring.File{Keys: append(fresh.Keys, old.Keys...)})
	require.NoError(t, err)
	rotated, err := keyring.Parse(both)
	require.NoError(t, err)
	onlyNew, err := keyring.Parse(k2)
	require.NoError(t, err)

	status, _ = do(t, e.WithKeyring(t, onlyNew), e.Tokens["u1"], "GET", "/v1/secrets/wandb/data/token", "")
	assert.Equal(t, http.StatusInternalServerError, status, "not yet rekeyed: the new key alone cannot open it")
	e2 := e.WithKeyring(t, rotated)
	status, body = do(t, e2, e.Tokens["admin"], "POST", "/v1/secrets/rekey", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.RekeyResponse{Key: "k2", Rekeyed: 1}, decode[wire.RekeyResponse](t, body))
	status, body = do(t, e2, e.Tokens["u1"], "GET", "/v1/secrets/wandb", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "k2", decode[wire.Config](t, body).SealedWith)
	assert.Equal(t, 1, decode[wire.Config](t, body).Version, "the same version")

	status, body = do(t, e.WithKeyring(t, onlyNew), e.Tokens["u1"], "GET", "/v1/secrets/wandb/data/token", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, value, string(decode[wire.SecretValue](t, body).Value))
	for i, entry := range e.Store.Log() {
		assert.False(t, keyringtest.Leaks(entry, value), "log entry %d", i+1)
	}
}

// A secret or config taken as environment variables (env: true) whose
// key is no variable name is refused at submit, naming the key and the
// rule; mounted as files it is taken.
func TestEnvConfigKeysAreVariableNames(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1 := e.Tokens["u1"]
	job := func(ref string) string {
		return fmt.Sprintf(`{kind: command, name: c, priority: low, command: [sh], resources: {cpu: "1"}, configs: [%s]}`, ref)
	}
	status, body := do(t, e, u1, "POST", "/v1/secrets", configBody(t, "db", "", map[string][]byte{"db-password": []byte("x"), "USER": []byte("u")}))
	require.Equal(t, http.StatusCreated, status, body)
	status, body = do(t, e, u1, "POST", "/v1/jobs", job("{secret: db, env: true}"))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, errMsg(t, body), `configs[0]: secret db has key "db-password", which is not an environment variable name (letters, digits and '_', not starting with a digit): mount it as files (mountPath) instead of env: true, or rename the key`)
	status, body = do(t, e, u1, "POST", "/v1/secrets", configBody(t, "tok", "", map[string][]byte{"ATOM_TOKEN": []byte("x")}))
	require.Equal(t, http.StatusCreated, status, body)
	status, body = do(t, e, u1, "POST", "/v1/jobs", job("{secret: tok, env: true}"))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, errMsg(t, body), "secret tok has key ATOM_TOKEN: ATOM_* variables are set by atom")
	status, body = do(t, e, u1, "POST", "/v1/jobs", job("{secret: db, mountPath: /etc/db}"))
	assert.Equal(t, http.StatusCreated, status, body)
}
