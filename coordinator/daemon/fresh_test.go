package daemon_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRestartedServerReadsNoStaleState: a server restarted on its data
// dir holds its log but applies it only once a leader says what is
// committed; until then it listed no jobs (found by a new user who
// restarted a follower and asked it first). Now, restarted while no
// leader can be elected, it answers 503 (retry) instead of an empty
// list, and once a second server is back, the job.
func TestRestartedServerReadsNoStaleState(t *testing.T) {
	const secret = "cluster-secret"
	ids := []string{"s1", "s2", "s3"}
	peers, raftAddrs, dirs := map[string]string{}, map[string]string{}, map[string]string{}
	for _, id := range ids {
		peers[id] = "http://" + freeAddr(t)
		raftAddrs[id], dirs[id] = freeAddr(t), t.TempDir()
	}
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	start := func(id string, first bool) *daemon.Daemon {
		t.Helper()
		cfg := daemon.Config{HTTPAddr: peers[id][len("http://"):], Peers: peers, Secret: secret, Tokens: tokens(t), Logger: quiet()}
		cfg.Server = server.Config{ID: id, RaftAddr: raftAddrs[id], DataDir: dirs[id], Bootstrap: first && id == "s1"}
		if first && id == "s1" {
			cfg.Cluster = cluster
		} else if first {
			cfg.Server.Join = []string{peers["s1"]}
		}
		fastRaft(&cfg.Server)
		d, err := daemon.Start(cfg)
		require.NoError(t, err)
		return d
	}
	ds := map[string]*daemon.Daemon{}
	for _, id := range ids {
		ds[id] = start(id, true)
	}
	ctx := context.Background()
	c := client.New(peers["s1"], adminToken)
	var job structs.JobID
	require.Eventually(t, func() bool { // the cluster config lands right after start
		r, err := c.SubmitJob(ctx, []byte("kind: command\nname: wait\ncommand: [sleep, '1000']\nresources: {cpu: 1}\nselector: rack=none\n"), "req-1")
		if err == nil {
			job = r.JobID
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)
	for _, d := range ds {
		require.Eventually(t, func() bool {
			found := false
			d.Server.Read(func(s *stateView) { found = s.Jobs[job] != nil })
			return found
		}, 10*time.Second, 20*time.Millisecond)
	}
	for _, id := range ids {
		require.NoError(t, ds[id].Close())
	}

	// s2 alone: no leader, and its state is empty until one commits.
	s2 := start("s2", false)
	t.Cleanup(func() { _ = s2.Close() })
	c2 := client.New(s2.URL, adminToken)
	c2.Retries = 0
	_, err = c2.ListJobs(ctx, client.JobFilter{})
	require.Error(t, err, "a server that has not caught up lists nothing rather than no jobs")
	assert.True(t, errors.Is(err, client.ErrUnavailable), "%v", err)
	assert.Contains(t, err.Error(), "server s2 has not caught up with the cluster since it started (no leader is known): retry, or ask another server")

	s3 := start("s3", false)
	t.Cleanup(func() { _ = s3.Close() })
	require.Eventually(t, func() bool {
		jobs, err := c2.ListJobs(ctx, client.JobFilter{})
		if err == nil {
			require.Len(t, jobs, 1, "once it answers, it has caught up")
			assert.Equal(t, job, jobs[0].ID)
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)
}
