package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/server"
)

// TestShutdownRightAfterElection: a server shut down just after it became
// leader, while its first Barrier may still be queued in Raft (which never
// answers a future queued when it stops), shuts down: the leader work does
// not wait for that answer. Repeated because the window is narrow; it
// hung TestProbes' cleanup about once in six package runs on a busy
// machine.
func TestShutdownRightAfterElection(t *testing.T) {
	for i := range 15 {
		s, err := server.New(server.Config{ID: "s0", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
			Cycle: 20 * time.Millisecond, HeartbeatTTL: time.Minute, Logger: testLogger(t)})
		require.NoError(t, err)
		require.Eventually(t, s.IsLeader, waitFor, time.Millisecond, "round %d: never leader", i)
		done := make(chan error, 1)
		go func() { done <- s.Shutdown() }()
		select {
		case err := <-done:
			require.NoError(t, err, "round %d", i)
		case <-time.After(15 * time.Second):
			t.Fatalf("round %d: Shutdown did not return within 15 s", i)
		}
	}
}
