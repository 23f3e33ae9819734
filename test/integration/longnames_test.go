package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// longestName is a job name of the most characters allowed (63).
func longestName(prefix string) string {
	return prefix + strings.Repeat("x", 63-len(prefix))
}

// TestLongestNamesLongDataDir: jobs with names of the longest length
// allowed run on servers whose data directories are over 200 characters
// long, so their task directories (and the task IDs mpirun takes as host
// names) are as long as they get: a command, a service, an MPI gang over
// two nodes and a command reading a dataset through its cache mount all
// run and write their logs. A Unix socket's path must stay within 108
// bytes wherever the data directory is: the plugins' sockets and
// mpirun's live in each task's short TMPDIR.
func TestLongestNamesLongDataDir(t *testing.T) {
	bin := allreduce(t)
	r := cachetest.StartRedis(t)
	sums := loadDataset(t, r, "frames/long", 3)
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-long-data-directory/", 10))
	require.NoError(t, os.MkdirAll(dir, 0o750))
	require.Greater(t, len(dir), 200)
	cfg := fmt.Sprintf(`clusters: [{name: local, backend: local, redis: "%s"}]
nodes:
  - {name: cpu-1, cpu: "8", memory: 32Gi}
  - {name: cpu-2, cpu: "8", memory: 32Gi}
quotas:
  - {scope: "user:dev", limits: {cpu: "16", memory: 64Gi}}
`, r.Addr)
	servers := startClusterIn(t, dir, cfg, 2)
	c := client.New(servers[0].url, token)
	ctx := context.Background()

	logOf := func(t *testing.T, id structs.JobID, task structs.TaskID) string {
		t.Helper()
		var b bytes.Buffer
		require.NoError(t, c.Logs(ctx, id, task, false, &b))
		return programOutput(b.String())
	}
	t.Run("command", func(t *testing.T) {
		spec := "kind: command\nname: " + longestName("command-") + "\ncommand: [sh, -c, 'echo hello from $ATOM_TASK_ID']\nresources: {cpu: 1, memory: 1Gi}\n"
		sub, err := c.SubmitJob(ctx, []byte(spec), "long-command")
		require.NoError(t, err)
		st := ended(t, c, sub.JobID, 60*time.Second)
		require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
		assert.Equal(t, "hello from "+string(st.Tasks[0].ID), logOf(t, sub.JobID, st.Tasks[0].ID))
	})
	t.Run("service", func(t *testing.T) {
		spec := "kind: service\nname: " + longestName("service-") + "\nreplicas: 2\ncommand: [sh, -c, 'echo up; exec sleep 300']\nresources: {cpu: 1, memory: 1Gi}\n"
		sub, err := c.SubmitJob(ctx, []byte(spec), "long-service")
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = c.CancelJob(context.Background(), sub.JobID) })
		require.Eventually(t, func() bool {
			st, err := c.Job(ctx, sub.JobID)
			if err != nil || st.Job.State != structs.JobRunning || len(st.Tasks) != 2 {
				return false
			}
			for _, tk := range st.Tasks {
				var b bytes.Buffer
				if tk.State != structs.TaskRunning || c.Logs(ctx, sub.JobID, tk.ID, false, &b) != nil || programOutput(b.String()) != "up" {
					return false
				}
			}
			return true
		}, 60*time.Second, 100*time.Millisecond, "both replicas run and write their logs")
		_, err = c.CancelJob(ctx, sub.JobID)
		require.NoError(t, err)
		st := ended(t, c, sub.JobID, 60*time.Second)
		assert.Equal(t, structs.JobCancelled, st.Job.State, st.Job.Reason)
	})
	t.Run("mpi", func(t *testing.T) {
		spec := fmt.Sprintf("kind: mpi\nname: %s\nreplicas: 2\naffinity: {spreadReplicas: true}\ncommand: [%s]\nresources: {cpu: 1, memory: 1Gi}\n", longestName("mpi-"), bin)
		sub, err := c.SubmitJob(ctx, []byte(spec), "long-mpi")
		require.NoError(t, err)
		st := ended(t, c, sub.JobID, 90*time.Second)
		var launcher structs.TaskID
		for _, tk := range st.Tasks {
			if tk.Index == 0 {
				launcher = tk.ID
			}
		}
		log := logOf(t, sub.JobID, launcher)
		require.Equal(t, structs.JobSucceeded, st.Job.State, "reason %q; launcher log:\n%s", st.Job.Reason, log)
		assert.Equal(t, "sum=3 size=2", log)
	})
	t.Run("cache", func(t *testing.T) {
		sub, err := c.SubmitJob(ctx, readerSpec(longestName("cache-"), "frames/long", ""), "long-cache")
		require.NoError(t, err)
		st := ended(t, c, sub.JobID, 60*time.Second)
		require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
		assert.Equal(t, sums, output(t, c, st))
	})
}
