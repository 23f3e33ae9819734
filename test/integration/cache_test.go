package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// loadDataset puts a dataset of two files (one spanning several 1 MiB
// chunks) into r's cache and returns the lines sha256sum prints for them,
// paths relative to the mount.
func loadDataset(t *testing.T, r *cachetest.Server, name string, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	big := make([]byte, 3<<20+12345)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	small := []byte("frame index of " + name + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small.txt"), small, 0o644))
	c := redisClient(t, r)
	_, err := c.Put(context.Background(), dir, name, nil)
	require.NoError(t, err)
	return fmt.Sprintf("%x  %s/big.bin\n%x  %s/small.txt\n", sha256.Sum256(big), name, sha256.Sum256(small), name)
}

func redisClient(t *testing.T, r *cachetest.Server) *cache.Client {
	t.Helper()
	c, err := cache.New(cache.Options{Addr: r.Addr, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Init(context.Background()))
	return c
}

// readerSpec is a job that checksums a dataset's files with plain open()
// through its cache mount (sha256sum), printing paths relative to it.
func readerSpec(name, dataset, extra string) []byte {
	return []byte(fmt.Sprintf(`kind: command
name: %s
command: [sh, -c, 'cd "$ATOM_CACHE_DIR" && sha256sum %s/big.bin %s/small.txt']
resources: {cpu: 1, memory: 1Gi}
cache: {datasets: [%s]}
%s`, name, dataset, dataset, dataset, extra))
}

// ended waits for job id to end and returns its status.
func ended(t *testing.T, c *client.Client, id structs.JobID, within time.Duration) *wire.JobStatus {
	t.Helper()
	var st *wire.JobStatus
	require.Eventually(t, func() bool {
		var err error
		st, err = c.Job(context.Background(), id)
		return err == nil && st.Job.State.Ended()
	}, within, 50*time.Millisecond)
	return st
}

// output is the log of job st's one task.
func output(t *testing.T, c *client.Client, st *wire.JobStatus) string {
	t.Helper()
	require.Len(t, st.Tasks, 1)
	var log bytes.Buffer
	require.NoError(t, c.Logs(context.Background(), st.Job.ID, st.Tasks[0].ID, false, &log))
	return log.String()
}

// TestCacheAwarePlacement: two clusters, a and b, each with its own
// Redis; a dataset is loaded into a's. Real coordinator servers run the
// jobs on the local backend under atom, which mounts each task's cluster
// cache with FUSE.
func TestCacheAwarePlacement(t *testing.T) {
	ra, rb := cachetest.StartRedis(t), cachetest.StartRedis(t)
	sums := loadDataset(t, ra, "frames/scene-1", 1)
	cfg := fmt.Sprintf(`clusters:
  - {name: a, backend: local, redis: "%s"}
  - {name: b, backend: local, redis: "%s"}
nodes:
  - {name: a-1, cluster: a, cpu: "4", memory: 16Gi}
  - {name: b-1, cluster: b, cpu: "4", memory: 16Gi}
quotas:
  - {scope: "user:dev", limits: {cpu: "16", memory: 64Gi}}
`, ra.Addr, rb.Addr)
	servers := startClusterWith(t, cfg, 2)
	c := client.New(servers[0].url, token)
	ctx := context.Background()
	bc := redisClient(t, rb)

	// 1. a holds the data and has room: the job runs there, nothing is
	// copied to b.
	sub, err := c.SubmitJob(ctx, readerSpec("read-a", "frames/scene-1", ""), "c-1")
	require.NoError(t, err)
	st := ended(t, c, sub.JobID, 60*time.Second)
	require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
	assert.Equal(t, structs.NodeID("a-1"), st.Tasks[0].Node)
	assert.Equal(t, sums, output(t, c, st))
	_, ok, err := bc.Complete(ctx, "frames/scene-1")
	require.NoError(t, err)
	assert.False(t, ok, "nothing was copied to b")

	// 2. a is full: the job goes to b, whose cache is warmed from a's
	// first; the job then reads the copy through b's mount.
	fill, err := c.SubmitJob(ctx, []byte("kind: command\nname: fill\ncluster: a\ncommand: [sleep, '300']\nresources: {cpu: 4, memory: 1Gi}\n"), "c-2")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = c.CancelJob(context.Background(), fill.JobID) })
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, fill.JobID)
		return err == nil && st.Job.State == structs.JobRunning
	}, 30*time.Second, 50*time.Millisecond)
	sub, err = c.SubmitJob(ctx, readerSpec("read-b", "frames/scene-1", ""), "c-3")
	require.NoError(t, err)
	st = ended(t, c, sub.JobID, 60*time.Second)
	require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
	assert.Equal(t, structs.NodeID("b-1"), st.Tasks[0].Node)
	info, ok, err := bc.Complete(ctx, "frames/scene-1")
	require.NoError(t, err)
	require.True(t, ok, "b's cache holds the dataset whole")
	assert.Equal(t, int64(2), info.Files)
	assert.Equal(t, int64(3<<20+12345+len("frame index of frames/scene-1\n")), info.Bytes)
	small, err := bc.ReadFile(ctx, "frames/scene-1/small.txt")
	require.NoError(t, err)
	assert.Equal(t, "frame index of frames/scene-1\n", string(small))
	assert.Equal(t, sums, output(t, c, st))
	assert.Empty(t, st.WarmUps)

	// 3. No cluster holds the data: the warm-up fails, the job (restart
	// policy Never) fails saying why, and its task never started.
	sub, err = c.SubmitJob(ctx, readerSpec("nowhere", "missing/set", ""), "c-4")
	require.NoError(t, err)
	st = ended(t, c, sub.JobID, 60*time.Second)
	assert.Equal(t, structs.JobFailed, st.Job.State)
	assert.Equal(t, "WarmUpFailed: cache warm-up of cluster b failed: dataset missing/set does not exist: no cluster's cache holds it (cluster b's, looked in a): "+
		"create it with atom cache put LOCAL_DIR missing/set against a cluster's redis (atom cache ls lists the datasets a cache holds)", st.Job.Reason)
	require.Len(t, st.Tasks, 1)
	assert.Equal(t, structs.TaskFailed, st.Tasks[0].State)
	assert.True(t, st.Tasks[0].StartedAt.IsZero(), "the task never started")

	// 4. The leader dies during a warm-up (b's Redis is paused, so the
	// copy cannot finish): the new leader runs the warm-up again and
	// starts the task itself.
	sums2 := loadDataset(t, ra, "frames/scene-2", 2)
	rb.Pause()
	lead := leader(t, servers)
	var other *srv
	for _, s := range servers {
		if s != lead {
			other = s
		}
	}
	c = client.New(other.url, token)
	sub, err = c.SubmitJob(ctx, readerSpec("read-b2", "frames/scene-2", ""), "c-5")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, sub.JobID)
		// Asked through a follower: the leader's progress comes along.
		return err == nil && len(st.WarmUps) == 1 && st.WarmUps[0].Running
	}, 20*time.Second, 20*time.Millisecond, "the job waits for b's warm-up")
	st, err = c.Job(ctx, sub.JobID)
	require.NoError(t, err)
	require.Len(t, st.WarmUps, 1)
	assert.Equal(t, structs.ClusterID("b"), st.WarmUps[0].Cluster)
	assert.Equal(t, []string{"frames/scene-2"}, st.WarmUps[0].Datasets)
	assert.Equal(t, structs.JobScheduled, st.Job.State)
	require.Len(t, st.Tasks, 1)
	assert.Equal(t, structs.TaskScheduled, st.Tasks[0].State, "not started while b is warmed")
	require.NoError(t, lead.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = lead.cmd.Process.Wait()
	rb.Resume()
	st = ended(t, c, sub.JobID, 60*time.Second)
	require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
	assert.Equal(t, structs.NodeID("b-1"), st.Tasks[0].Node)
	assert.Equal(t, sums2, output(t, c, st))
	_, ok, err = bc.Complete(ctx, "frames/scene-2")
	require.NoError(t, err)
	assert.True(t, ok)

	// 5. b's Redis is down when the job is placed (restarting): the
	// warm-up tries again, showing it, and the job runs once Redis is back.
	rb.Stop()
	sub, err = c.SubmitJob(ctx, readerSpec("down", "frames/scene-1", "cluster: b\n"), "c-6")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, sub.JobID)
		return err == nil && len(st.WarmUps) == 1 && st.WarmUps[0].Retries > 0
	}, 60*time.Second, 50*time.Millisecond, "the warm-up tries again")
	st, err = c.Job(ctx, sub.JobID)
	require.NoError(t, err)
	assert.Contains(t, st.WarmUps[0].LastError, "cluster b's cache: redis "+rb.Addr+" not reachable")
	rb.Restart()
	st = ended(t, c, sub.JobID, 60*time.Second)
	require.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
	assert.Equal(t, sums, output(t, c, st))
}
