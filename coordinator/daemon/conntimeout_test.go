package daemon_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
)

// Stalled and idle connections are closed: a client that promises a body
// and stops sending, or keeps a connection open after its answer (a 401
// included), cannot hold it for ever (found by a new user's test: both
// stayed open indefinitely).
func TestStalledAndIdleConnectionsClosed(t *testing.T) {
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Logger: quiet(),
		HTTPReadTimeout: 300 * time.Millisecond, HTTPIdleTimeout: 300 * time.Millisecond}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	addr := strings.TrimPrefix(d.URL, "http://")

	closed := func(c net.Conn) {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		_, err := io.ReadAll(c) // returns at EOF: the server closed it
		assert.NoError(t, err, "the server closes the connection, before the test's deadline")
	}

	// A body promised and never sent.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+adminToken+"\r\nContent-Length: 1000000\r\n\r\nkind: command\n")
	require.NoError(t, err)
	closed(c)

	// An answered request (401), then nothing.
	c2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c2.Close()
	_, err = io.WriteString(c2, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, _ = io.Copy(io.Discard, resp.Body)
	closed(c2)
}
