package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// config and secret create, get, list, update and delete; a secret's
// value only with --show, exactly; service restart; job status shows
// each task's versions.
func TestConfigCommands(t *testing.T) {
	e := apitest.NewEnv(t, "")
	dir := t.TempDir()
	lr := filepath.Join(dir, "lr.txt")
	require.NoError(t, os.WriteFile(lr, []byte("0.1\n"), 0o600))
	blob := filepath.Join(dir, "blob")
	require.NoError(t, os.WriteFile(blob, []byte{0, 1, 0xff}, 0o600))

	assert.Equal(t, "config train created for project:perception: version 1, 3 key(s), 11 bytes\n",
		must(t, e, "u1", "config", "create", "train", "--from-file", "lr="+lr, "--from-file", blob, "--from-literal", "mode=fast", "--project", "perception"))
	out := must(t, e, "m1", "config", "get", "--project", "perception", "train")
	assert.Contains(t, out, "Owner:    project:perception\n")
	assert.Contains(t, out, "KEY   BYTES\nblob  3\nlr    4\nmode  4\n")
	assert.Contains(t, out, "--- blob: 3 bytes, not text (-o yaml shows them in base64)\n\n--- lr\n0.1\n\n--- mode\nfast\n")
	out = must(t, e, "u1", "config", "get", "train", "--project", "perception", "-o", "json")
	var c wire.Config
	require.NoError(t, json.Unmarshal([]byte(out), &c), out)
	assert.Equal(t, []byte{0, 1, 0xff}, c.Data["blob"])

	_, err := run(t, e, "u1", "config", "create", "x", "--from-literal", "novalue")
	assert.ErrorContains(t, err, "--from-literal takes KEY=VALUE")
	_, err = run(t, e, "u1", "config", "create", "x")
	assert.ErrorContains(t, err, "give its data")
	_, err = run(t, e, "u1", "config", "create", "x", "--from-literal", "a=1", "--from-literal", "a=2")
	assert.ErrorContains(t, err, `key "a" is given twice`)

	const value = "the-wandb-api-key-0123456789"
	assert.Equal(t, "secret wandb created for user:u1: version 1, 1 key(s), 28 bytes\n",
		must(t, e, "u1", "secret", "create", "wandb", "--from-literal", "WANDB_API_KEY="+value))
	for _, args := range [][]string{{"secret", "list"}, {"secret", "get", "wandb"}, {"secret", "get", "wandb", "-o", "yaml"}, {"secret", "list", "-o", "json"}} {
		out := must(t, e, "u1", args...)
		assert.NotContains(t, out, value, args)
		assert.Contains(t, out, "WANDB_API_KEY", args)
	}
	assert.Equal(t, value, must(t, e, "u1", "secret", "get", "wandb", "--show", "WANDB_API_KEY"), "the value as it is")
	_, err = run(t, e, "u2", "secret", "get", "--show", "WANDB_API_KEY", "wandb")
	assert.ErrorContains(t, err, "secret wandb of user:u2 not found")
	assert.Contains(t, must(t, e, "u1", "secret", "list"), "NAME   OWNER    VERSION  KEYS           BYTES  UPDATED              USED BY  SEALED WITH\nwandb  user:u1  1        WANDB_API_KEY  28     2026-03-01 09:00:00  -        k1\n")

	spec := file(t, `kind: service
name: web
project: perception
priority: low
replicas: 2
minAvailable: 1
command: [sleep, "1000"]
resources: {cpu: "1"}
configs: [{config: train, mountPath: /etc/train}, {secret: wandb, env: true}]
`)
	must(t, e, "u1", "job", "submit", "-f", spec)
	e.Store.Schedule(t, apitest.T0)
	for _, tk := range e.Store.Tasks("web-00001") {
		e.Store.Report(t, tk.ID, structs.TaskRunning, apitest.T0)
	}
	out = must(t, e, "u1", "config", "update", "train", "--from-literal", "lr=0.2", "--project", "perception")
	assert.Equal(t, "config train updated: version 2, 1 key(s), 3 bytes\n"+
		"running tasks keep the version they started with; used by web-00001 (coordinator service restart ID gives a service's replicas this one)\n", out)
	assert.Equal(t, "config train unchanged: it holds this data already (version 2)\n",
		must(t, e, "u1", "config", "update", "train", "--from-literal", "lr=0.2", "--project", "perception"))
	_, err = run(t, e, "u1", "config", "delete", "train", "--project", "perception")
	assert.ErrorContains(t, err, "config train is in use by job web-00001")

	assert.Equal(t, "service web-00001: its 2 replicas restart one at a time, at least 1 running throughout; job status shows each task's config versions\n",
		must(t, e, "u1", "service", "restart", "web-00001"))
	out = must(t, e, "u1", "job", "status", "web-00001")
	assert.Contains(t, out, "Config:     config train (project:perception) at /etc/train\n")
	assert.Contains(t, out, "Config:     secret wandb (user:u1) as environment variables\n")
	assert.Contains(t, out, "Restart:    0 of 2 replicas restarted, one at a time\n")
	assert.Contains(t, out, "CONFIGS")
	assert.Contains(t, out, "Stopping (Restarted)")
	assert.Equal(t, 2, strings.Count(out, "train:1,wandb:1"), out)
	// Each replica in turn stops, is placed again and runs: 1 of 2, then
	// the restart is over.
	for _, want := range []string{"Restart:    1 of 2 replicas restarted, one at a time\n", ""} {
		for _, tk := range e.Store.Tasks("web-00001") {
			if tk.State == structs.TaskStopping {
				e.Store.Report(t, tk.ID, structs.TaskSucceeded, apitest.T0)
			}
		}
		e.Store.Schedule(t, apitest.T0)
		for _, tk := range e.Store.Tasks("web-00001") {
			if tk.State == structs.TaskScheduled {
				e.Store.Report(t, tk.ID, structs.TaskRunning, apitest.T0)
			}
		}
		out = must(t, e, "u1", "job", "status", "web-00001")
		if want == "" {
			assert.NotContains(t, out, "Restart:")
			assert.Equal(t, 2, strings.Count(out, "train:2,wandb:1"), out)
		} else {
			assert.Contains(t, out, want)
		}
	}
	_, err = run(t, e, "u1", "service", "restart", "nope-1")
	assert.ErrorContains(t, err, "job nope-1 not found")

	out = must(t, e, "admin", "secret", "rekey")
	assert.Equal(t, "0 secret version(s) sealed again with key k1\nno secret is sealed with another key: keys other than the first may leave the keyring\n", out)
	must(t, e, "u1", "job", "cancel", "web-00001")
	assert.Equal(t, "secret wandb deleted\n", must(t, e, "u1", "secret", "delete", "wandb"))
}

// An admin names another user's configs and secrets with --user, as the
// API allows (?user=U): get, list, update and delete; a user may not,
// and --project with --user is refused.
func TestConfigCommandsOfAnotherUser(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "config", "create", "notes", "--from-literal", "a=1")
	must(t, e, "u1", "secret", "create", "token", "--from-literal", "T=x")

	assert.Contains(t, must(t, e, "admin", "config", "get", "notes", "--user", "u1"), "Owner:    user:u1\n")
	assert.Contains(t, must(t, e, "admin", "secret", "get", "--user", "u1", "token"), "Owner:        user:u1\n")
	assert.Equal(t, "no configs\n", must(t, e, "admin", "config", "list", "--user", "u2"))
	assert.Contains(t, must(t, e, "admin", "config", "list", "--user", "u1"), "\nnotes  user:u1")
	assert.Equal(t, "config notes updated: version 2, 1 key(s), 1 bytes\n",
		must(t, e, "admin", "config", "update", "notes", "--from-literal", "a=2", "--user", "u1"))
	assert.Equal(t, "config notes created for user:u2: version 1, 1 key(s), 1 bytes\n",
		must(t, e, "admin", "config", "create", "notes", "--from-literal", "a=2", "--user", "u2"))

	_, err := run(t, e, "u2", "config", "get", "notes", "--user", "u1")
	assert.ErrorContains(t, err, "only admins name another user's configs and secrets")
	_, err = run(t, e, "admin", "config", "get", "notes", "--user", "u1", "--project", "perception")
	assert.ErrorContains(t, err, "give --project or --user, not both")

	assert.Equal(t, "config notes of user:u1 deleted\n", must(t, e, "admin", "config", "delete", "notes", "--user", "u1"))
	assert.Equal(t, "secret token of user:u1 deleted\n", must(t, e, "admin", "secret", "delete", "--user", "u1", "token"))
	_, err = run(t, e, "u1", "config", "get", "notes")
	assert.ErrorContains(t, err, "config notes of user:u1 not found")
}

// config list with a config of many keys (--from-file DIR) shows as many
// of them as fit and how many more, so that the other rows' columns stay
// on the screen; config get and -o json list them all. It printed every
// key in the KEYS cell, and every row was padded to the longest.
func TestConfigListFitsManyKeys(t *testing.T) {
	e := apitest.NewEnv(t, "")
	dir := t.TempDir()
	for i := range 25 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("settings-%02d.yaml", i)), []byte("x\n"), 0o600))
	}
	must(t, e, "u1", "config", "create", "big", "--from-file", dir)
	must(t, e, "u1", "config", "create", "small", "--from-literal", "a=1", "--from-literal", "b=2")
	assert.Equal(t, "NAME   OWNER    VERSION  KEYS                                            BYTES  UPDATED              USED BY\n"+
		"big    user:u1  1        settings-00.yaml, settings-01.yaml and 23 more  50     2026-03-01 09:00:00  -\n"+
		"small  user:u1  1        a, b                                            2      2026-03-01 09:00:00  -\n",
		must(t, e, "u1", "config", "list"))
	assert.Contains(t, must(t, e, "u1", "config", "get", "big"), "settings-24.yaml  2\n")
	assert.Contains(t, must(t, e, "u1", "config", "list", "-o", "json"), `"settings-24.yaml"`)

	assert.Equal(t, "a, b", fit([]string{"a", "b"}, 4))
	assert.Equal(t, "a and 1 more", fit([]string{"a", "b"}, 3), "one name at least")
	four := []string{"alpha", "beta", "gamma", "delta"}
	assert.Equal(t, "alpha, beta, gamma, delta", fit(four, 25))
	assert.Equal(t, "alpha, beta and 2 more", fit(four, 24))
	assert.Equal(t, "alpha and 3 more", fit(four, 21))
}
