package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestProbes: /healthz answers while the process serves; /readyz only once
// a leader is known. A server still trying to join a cluster it cannot
// reach is alive but not ready; a bootstrapped one becomes ready. Neither
// needs a token.
func TestProbes(t *testing.T) {
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Logger: quiet(), Secret: "s"}
	cfg.Server = server.Config{ID: "s2", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Join: []string{"http://" + freeAddr(t)}}
	fastRaft(&cfg.Server)
	joining, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = joining.Close() })
	code, body := probe(t, joining.URL+daemon.PathHealthz)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = probe(t, joining.URL+daemon.PathReadyz)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "no raft leader known\n", body)

	cfg = daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Logger: quiet()}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true}
	fastRaft(&cfg.Server)
	boot, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = boot.Close() })
	require.Eventually(t, func() bool {
		code, _ := probe(t, boot.URL+daemon.PathReadyz)
		return code == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "a bootstrapped server becomes ready")
	code, body = probe(t, boot.URL+daemon.PathHealthz)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
}

// bigCluster is a cluster config of n CPU nodes and a V100 node, the
// last applied, and user dev's quota, applied after every node: applying
// it takes a while.
func bigCluster(t *testing.T, n int) *structs.ClusterConfig {
	t.Helper()
	var b strings.Builder
	b.WriteString("clusters: [{name: local, backend: local}]\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: cpu-%d, cpu: \"8\", memory: 32Gi}\n", i)
	}
	b.WriteString("  - {name: v100-1, cpu: \"48\", memory: 384Gi, accelerators: {type: V100, count: 4}}\n")
	b.WriteString("quotas:\n  - {scope: \"user:dev\", limits: {gpu/V100: 4}}\n")
	cc, err := structs.ParseClusterConfig([]byte(b.String()))
	require.NoError(t, err)
	return cc
}

// TestReadyOnceTheClusterConfigIsIn: /readyz says 200 only once the
// cluster config is in, on the server that seeds the cluster with it and
// on a server that joins meanwhile; a job submitted at once then finds
// its accelerators and its quota.
func TestReadyOnceTheClusterConfigIsIn(t *testing.T) {
	const secret = "cluster-secret"
	addrs := map[string]string{"s1": freeAddr(t), "s2": freeAddr(t)}
	peers := map[string]string{"s1": "http://" + addrs["s1"], "s2": "http://" + addrs["s2"]}
	cc := bigCluster(t, 300)
	var ds []*daemon.Daemon
	for _, id := range []string{"s1", "s2"} {
		cfg := daemon.Config{HTTPAddr: addrs[id], Peers: peers, Secret: secret, Tokens: tokens(t), Logger: quiet()}
		cfg.Server = server.Config{ID: id, RaftAddr: "127.0.0.1:0", DataDir: t.TempDir()}
		if id == "s1" {
			cfg.Server.Bootstrap, cfg.Cluster = true, cc
		} else {
			cfg.Server.Join = []string{peers["s1"]}
		}
		fastRaft(&cfg.Server)
		d, err := daemon.Start(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		ds = append(ds, d)
	}
	spec := []byte("kind: command\nname: on-v100\ncommand: [sleep, '1000']\nresources: {accelerators: {type: V100, count: 4}}\n")
	for i, d := range ds {
		require.Eventually(t, func() bool {
			code, _ := probe(t, d.URL+daemon.PathReadyz)
			return code == http.StatusOK
		}, 60*time.Second, 5*time.Millisecond, "server %s becomes ready", d.Server.ID())
		var nodes int
		var quota bool
		d.Server.Read(func(s *stateView) { nodes, quota = len(s.Nodes), s.Quotas["user:dev"] != nil })
		assert.Equal(t, 301, nodes, "server %s is ready with every node", d.Server.ID())
		assert.True(t, quota, "server %s is ready with the quota", d.Server.ID())
		r, err := client.New(d.URL, adminToken).SubmitJob(context.Background(), spec, fmt.Sprintf("req-%d", i))
		require.NoError(t, err, "a submission right after /readyz is accepted")
		_, err = client.New(d.URL, adminToken).CancelJob(context.Background(), r.JobID)
		require.NoError(t, err)
	}
}
