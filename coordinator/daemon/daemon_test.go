package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

const adminToken = "admin-token-0123456789"

func tokens(t *testing.T) api.TokenFile {
	t.Helper()
	f, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	return f
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fastRaft(c *server.Config) {
	c.HeartbeatTTL, c.Cycle = 3*time.Second, 50*time.Millisecond
	c.StopGrace = 2 * time.Second
}

// startDev starts what coordinator dev runs: one bootstrapped server with
// the embedded cluster and the local backend, data (and task
// directories under work/tasks) in the returned directory.
func startDev(t *testing.T) (*daemon.Daemon, string) {
	t.Helper()
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	return startDevWith(t, cluster)
}

// startDevWith is startDev with another cluster.
func startDevWith(t *testing.T, cluster *structs.ClusterConfig) (*daemon.Daemon, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Cluster: cluster, Logger: quiet()}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d, dir
}

// TestDevRunsAJobToSucceeded is the dev-mode promise: one process, a job
// submitted over the API runs as a real process and ends Succeeded.
func TestDevRunsAJobToSucceeded(t *testing.T) {
	d, dir := startDev(t)

	c := client.New(d.URL, adminToken)
	ctx := context.Background()
	spec := []byte("kind: command\nname: hello\ncommand: [sh, -c, 'echo hi from $ATOM_TASK_ID > out.txt; echo to stdout; echo to stderr >&2']\nresources: {cpu: 1, memory: 1Gi}\n")
	var sub string
	require.Eventually(t, func() bool { // the cluster config lands right after start
		r, err := c.SubmitJob(ctx, spec, "req-1")
		if err == nil {
			sub = string(r.JobID)
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, structs.JobID(sub))
		return err == nil && st.Job.State == structs.JobSucceeded
	}, 20*time.Second, 50*time.Millisecond)
	st, err := c.Job(ctx, structs.JobID(sub))
	require.NoError(t, err)
	require.Len(t, st.Tasks, 1)
	task := st.Tasks[0]
	out, err := os.ReadFile(filepath.Join(dir, "work", "tasks", string(task.ID), "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("hi from %s\n", task.ID), string(out))
	assert.Equal(t, structs.TaskSucceeded, task.State)
	var logs strings.Builder
	require.NoError(t, c.Logs(ctx, structs.JobID(sub), "", false, &logs))
	assert.Equal(t, "to stdout\nto stderr\n", logs.String())

	// A failing command ends Failed with its exit code.
	r, err := c.SubmitJob(ctx, []byte("kind: command\nname: boom\ncommand: [sh, -c, 'exit 3']\nresources: {cpu: 1, memory: 1Gi}\n"), "req-2")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, r.JobID)
		return err == nil && st.Job.State == structs.JobFailed
	}, 20*time.Second, 50*time.Millisecond)
	st, err = c.Job(ctx, r.JobID)
	require.NoError(t, err)
	assert.Equal(t, "replica 0 failed with exit code 3", st.Job.Reason)
}

// TestFollowerForwardsWrites: three servers; a submission sent to a
// follower is applied by the leader and visible everywhere; why-pending
// is answered from any server.
func TestFollowerForwardsWrites(t *testing.T) {
	const secret = "cluster-secret"
	ids := []string{"s1", "s2", "s3"}
	httpAddrs := map[string]string{}
	peers := map[string]string{}
	for _, id := range ids {
		httpAddrs[id] = freeAddr(t)
		peers[id] = "http://" + httpAddrs[id]
	}
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	ds := map[string]*daemon.Daemon{}
	for i, id := range ids {
		cfg := daemon.Config{HTTPAddr: httpAddrs[id], Peers: peers, Secret: secret, Tokens: tokens(t), Logger: quiet()}
		cfg.Server = server.Config{ID: id, RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: i == 0}
		if i == 0 {
			cfg.Cluster = cluster
		} else {
			cfg.Server.Join = []string{peers["s1"]}
		}
		fastRaft(&cfg.Server)
		d, err := daemon.Start(cfg)
		require.NoError(t, err)
		ds[id] = d
		t.Cleanup(func() { _ = d.Close() })
	}
	require.Eventually(t, func() bool {
		n := 0
		for _, d := range ds {
			d.Server.Read(func(s *stateView) { n += len(s.Nodes) })
		}
		return n == 3*8
	}, 20*time.Second, 50*time.Millisecond, "every server has the cluster config")

	var follower *daemon.Daemon
	for _, d := range ds {
		if !d.Server.IsLeader() {
			follower = d
			break
		}
	}
	require.NotNil(t, follower)
	c := client.New(follower.URL, adminToken)
	ctx := context.Background()
	r, err := c.SubmitJob(ctx, []byte("kind: command\nname: wait\ncommand: [sleep, '1000']\nresources: {accelerators: {type: A100, count: 8}}\nselector: rack=none\n"), "req-f")
	require.NoError(t, err)
	require.NotNil(t, r.Job, "the follower has applied the forwarded write before it answers")
	st, err := c.Job(ctx, r.JobID)
	require.NoError(t, err, "read your writes on a follower")
	assert.Equal(t, structs.JobPending, st.Job.State)
	again, err := c.SubmitJob(ctx, []byte("kind: command\nname: wait\ncommand: [sleep, '1000']\nresources: {accelerators: {type: A100, count: 8}}\nselector: rack=none\n"), "req-f")
	require.NoError(t, err)
	assert.Equal(t, r.JobID, again.JobID, "the retry returns the same job")
	assert.True(t, again.Existing)
	require.Eventually(t, func() bool {
		w, err := c.Why(ctx, r.JobID)
		return err == nil && w.Why != nil
	}, 10*time.Second, 50*time.Millisecond)
	w, err := c.Why(ctx, r.JobID)
	require.NoError(t, err)
	assert.Contains(t, w.Why.Message, "not matching selector rack=none")
	for _, d := range ds {
		require.Eventually(t, func() bool {
			found := false
			d.Server.Read(func(s *stateView) { found = s.Jobs[r.JobID] != nil })
			return found
		}, 10*time.Second, 20*time.Millisecond)
	}
}
