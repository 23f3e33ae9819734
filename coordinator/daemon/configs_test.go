package daemon_test

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/keyring/keyringtest"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
	"github.com/atom-sched/atom/test/testlog"
)

// TestDevConfigsAndSecrets: on coordinator dev, a service's replicas
// read a config as read-only files and a secret as environment variables
// and as a 0400 file; an update leaves them as they were until service restart,
// after which every replica reads the new version; the config cannot be
// deleted while the service runs. The secret's value is in no Raft log
// entry, snapshot or server log line (debug level), only in the tasks'
// own directories.
func TestDevConfigsAndSecrets(t *testing.T) {
	dir := t.TempDir()
	f, err := keyring.Generate("k1")
	require.NoError(t, err)
	kr, err := keyring.Parse(f)
	require.NoError(t, err)
	logs := &testlog.Buffer{}
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Cluster: cluster, Keyring: kr,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	c := client.New(d.URL, adminToken)
	ctx := context.Background()

	const password = "correct-horse-battery-staple-42"
	const page1, page2 = "page-version-1-a-config-is-no-secret", "page-version-2-a-config-is-no-secret"
	tlsKey := []byte("-----BEGIN KEY-----\x00\x01binary\xff")
	_, err = c.CreateConfig(ctx, structs.ConfigKindConfig, "", wire.ConfigSpec{Name: "web", Data: structs.ConfigData{"index.html": []byte(page1)}})
	require.NoError(t, err)
	_, err = c.CreateConfig(ctx, structs.ConfigKindSecret, "", wire.ConfigSpec{Name: "db", Data: structs.ConfigData{"PASSWORD": []byte(password)}})
	require.NoError(t, err)
	_, err = c.CreateConfig(ctx, structs.ConfigKindSecret, "", wire.ConfigSpec{Name: "tls", Data: structs.ConfigData{"key": tlsKey}})
	require.NoError(t, err)

	// Each replica copies what it got into its directory, then sleeps.
	spec := []byte(`kind: service
name: web
replicas: 2
minAvailable: 1
command: [sh, -c, 'cd $ATOM_CONFIG_ROOT/etc/web; { echo x > index.html || echo refused; touch new || echo refused; } 2> /dev/null > $HOME/wrote; cat index.html > $HOME/seen; echo "$PASSWORD" > $HOME/pw; exec sleep 600']
resources: {cpu: 1, memory: 1Gi}
configs: [{config: web, mountPath: /etc/web}, {secret: db, env: true}, {secret: tls, mountPath: /etc/tls}]
`)
	var id structs.JobID
	require.Eventually(t, func() bool { // the cluster config lands right after start
		r, err := c.SubmitJob(ctx, spec, "web")
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	taskDir := func(tk *structs.Task) string { return filepath.Join(dir, "work", "tasks", string(tk.ID)) }
	// seen waits until every running replica has read version want of
	// the config and returns the replicas.
	seen := func(want string) []*structs.Task {
		t.Helper()
		var running []*structs.Task
		require.Eventually(t, func() bool {
			st, err := c.Job(ctx, id)
			if err != nil {
				return false
			}
			running = running[:0]
			for _, tk := range st.Tasks {
				if tk.State != structs.TaskRunning {
					continue
				}
				b, err := os.ReadFile(filepath.Join(taskDir(tk), "seen"))
				if err != nil || string(b) != want {
					return false
				}
				running = append(running, tk)
			}
			return len(running) == 2
		}, 20*time.Second, 50*time.Millisecond, "two replicas reading %q", want)
		return running
	}
	for _, tk := range seen(page1) {
		b, err := os.ReadFile(filepath.Join(taskDir(tk), "pw"))
		require.NoError(t, err)
		assert.Equal(t, password+"\n", string(b), "the secret as env")
		key := filepath.Join(taskDir(tk), "configs", "etc", "tls", "key")
		b, err = os.ReadFile(key)
		require.NoError(t, err)
		assert.Equal(t, tlsKey, b, "the secret as a file, bytes exactly")
		fi, err := os.Stat(key)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())
		fi, err = os.Stat(filepath.Dir(key))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o500), fi.Mode().Perm())
		b, err = os.ReadFile(filepath.Join(taskDir(tk), "wrote"))
		require.NoError(t, err)
		assert.Equal(t, "refused\nrefused\n", string(b), "configs are read-only, even to a task run as root")
		assert.Equal(t, 1, tk.Configs[0].Version)
	}

	_, err = c.UpdateConfig(ctx, structs.ConfigKindConfig, "", "web", wire.ConfigSpec{Data: structs.ConfigData{"index.html": []byte(page2)}})
	require.NoError(t, err)
	before := seen(page1)
	_, err = c.RestartService(ctx, id)
	require.NoError(t, err)
	after := seen(page2)
	for _, tk := range after {
		assert.NotContains(t, []structs.TaskID{before[0].ID, before[1].ID}, tk.ID, "a replica placed again")
		assert.Contains(t, tk.Configs, structs.TaskConfig{ConfigID: structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: "user:dev", Name: "web"}, Version: 2})
	}

	err = c.DeleteConfig(ctx, structs.ConfigKindConfig, "", "web")
	require.ErrorIs(t, err, client.ErrConflict)
	assert.Contains(t, err.Error(), "config web is in use by job "+string(id))
	_, err = c.CancelJob(ctx, id)
	require.NoError(t, err)
	require.NoError(t, c.DeleteConfig(ctx, structs.ConfigKindConfig, "", "web"))

	require.NoError(t, d.Server.Snapshot())
	files, configSeen := 0, false
	require.NoError(t, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.HasPrefix(p, filepath.Join(dir, "work")+string(filepath.Separator)) {
			return nil // the tasks' own directories
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.False(t, keyringtest.Leaks(b, password), "%s holds the secret", p)
		configSeen = configSeen || keyringtest.Leaks(b, page1)
		files++
		return nil
	}))
	assert.GreaterOrEqual(t, files, 2, "the Raft log and a snapshot")
	assert.True(t, configSeen, "a config's value is found in the Raft log: the search works")
	assert.NotEmpty(t, []byte(logs.String()))
	assert.False(t, keyringtest.Leaks([]byte(logs.String()), password), "the server's log holds the secret")
}
