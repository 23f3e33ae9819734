package daemon_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
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
