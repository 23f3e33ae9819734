// Package cachetest starts real Redis servers (Debian's redis-server) for
// tests of the dataset cache, each on a free loopback port with its own
// directory, and stops them when the test ends.
package cachetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Server is one redis-server process.
type Server struct {
	Addr string
	Port int
	host string
	dir  string
	cmd  *exec.Cmd
	t    testing.TB
}

// RedisBinary finds redis-server, or fails t saying how to get it.
func RedisBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed: run make test (it installs it) or apt-get install -y redis-server")
	}
	return p
}

// StartRedis starts a redis-server on a free loopback port; it is
// stopped (and its directory removed) when t ends. Data is saved to the
// directory on a clean stop, so Restart keeps it.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	return StartRedisOn(t, "127.0.0.1", 0)
}

// StartRedisOn is StartRedis listening on host (an address of this
// machine: only there, never on all addresses) and port (0: a free one).
func StartRedisOn(t testing.TB, host string, port int) *Server {
	t.Helper()
	RedisBinary(t)
	if port == 0 {
		port = FreePort(t, host)
	}
	s := &Server{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Port: port, host: host, dir: t.TempDir(), t: t}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// FreePort is a TCP port free on host at the time of the call.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	s.t.Helper()
	log, err := os.Create(filepath.Join(s.dir, "redis.log"))
	require.NoError(s.t, err)
	defer log.Close()
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.Port), "--bind", s.host,
		"--dir", s.dir, "--save", "3600 1", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "no", "--maxmemory", "0", "--loglevel", "warning")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	require.NoError(s.t, s.cmd.Start())
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	require.Eventually(s.t, func() bool {
		return rdb.Ping(context.Background()).Err() == nil
	}, 30*time.Second, 20*time.Millisecond, "redis-server on %s did not answer; see %s", s.Addr, log.Name())
}

// Stop shuts the server down cleanly (saving its data). Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // in case it was paused
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Restart starts the server again on the same port with the saved data.
func (s *Server) Restart() { s.start() }

// Pause stops the process (SIGSTOP): connections hang, as with a server
// or network that stops answering. Resume undoes it.
func (s *Server) Pause() { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGSTOP)) }

// Resume continues a paused server.
func (s *Server) Resume() { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGCONT)) }

// String is the address, for messages.
func (s *Server) String() string { return fmt.Sprintf("redis %s", s.Addr) }
