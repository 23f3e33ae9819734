package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestExpiredTasksLeaveNoDirectory: once a job is past the retention and
// leaves the state, its tasks' directories (their output) go from the
// disk too; they stayed for ever (found by a new user trying
// --retention). A running job's stay.
func TestExpiredTasksLeaveNoDirectory(t *testing.T) {
	dir := t.TempDir()
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Cluster: cluster, Logger: quiet(), TaskDirSweep: 20 * time.Millisecond}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true, Retention: 300 * time.Millisecond}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	c := client.New(d.URL, adminToken)
	ctx := context.Background()
	submit := func(spec string) structs.JobID {
		t.Helper()
		var id structs.JobID
		require.Eventually(t, func() bool { // the cluster config lands right after start
			r, err := c.SubmitJob(ctx, []byte(spec), "")
			if err == nil {
				id = r.JobID
			}
			return err == nil
		}, 10*time.Second, 20*time.Millisecond)
		return id
	}
	taskDir := func(id structs.JobID) string {
		t.Helper()
		var st *structs.Task
		require.Eventually(t, func() bool {
			js, err := c.Job(ctx, id)
			if err == nil && len(js.Tasks) == 1 && js.Tasks[0].State == structs.TaskRunning || err == nil && js.Job.State.Ended() {
				st = js.Tasks[0]
				return true
			}
			return false
		}, 20*time.Second, 20*time.Millisecond)
		return filepath.Join(dir, "work", "tasks", string(st.ID))
	}

	runs := submit("kind: command\nname: runs\ncommand: [sleep, '60']\nresources: {cpu: 1}\n")
	runsDir := taskDir(runs)
	done := submit("kind: command\nname: done\ncommand: [sh, -c, 'echo bye']\nresources: {cpu: 1}\n")
	doneDir := taskDir(done)
	require.Eventually(t, func() bool {
		_, err := c.Job(ctx, done)
		return err != nil
	}, 20*time.Second, 20*time.Millisecond, "the ended job expires")
	require.Eventually(t, func() bool {
		_, err := os.Stat(doneDir)
		return os.IsNotExist(err)
	}, 10*time.Second, 20*time.Millisecond, "and its task's directory goes")
	_, err = os.Stat(filepath.Join(runsDir, "output.log"))
	assert.NoError(t, err, "a running task's directory stays")
	js, err := c.Job(ctx, runs)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, js.Job.State)
}
