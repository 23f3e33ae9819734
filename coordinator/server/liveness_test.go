package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A heartbeat that comes once the term's events are no longer committed
// (its flush stopped) is answered at once, not when every piece of leader
// work has stopped: a piece that heartbeats itself (the local backend's
// Start reports a task that cannot start) then waited for itself, and the
// server's leader work never stopped.
func TestHeartbeatAfterTheTermEndedIsAnswered(t *testing.T) {
	t.Parallel()
	s, err := New(Config{ID: "s0", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	require.Eventually(t, s.Authoritative, 15*time.Second, 5*time.Millisecond)
	ctx := context.Background()
	for _, c := range []state.Command{
		&state.NodeUpsert{Node: st.C64("c1")},
		&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 1 << 40, "memory": 1 << 60}}},
		&state.JobSubmit{RequestID: "a", Job: func() *structs.Job { j := st.NewJob("a", "u1").CPU(1, 1).Obj(); j.ID = "a-1"; return j }(), Now: time.Now()},
	} {
		_, err := s.Apply(ctx, c)
		require.NoError(t, err)
	}
	var id structs.TaskID
	var token string
	require.Eventually(t, func() bool {
		s.Read(func(st *state.State) {
			for tid := range st.Tasks {
				id, token = tid, st.Tokens[tid]
			}
		})
		return id != ""
	}, 15*time.Second, 5*time.Millisecond, "the job was never placed")

	// A term of its own, beside the server's: its flush stops.
	l := newLiveness(s, time.Now())
	tctx, end := context.WithCancel(ctx)
	flushed := make(chan struct{})
	go func() { defer close(flushed); l.flush(tctx) }()
	end()
	<-flushed

	answered := make(chan error, 1)
	go func() { answered <- l.heartbeat(id, token, structs.TaskEvent{State: structs.TaskRunning}) }()
	select {
	case err := <-answered:
		assert.ErrorIs(t, err, ErrOutcomeUnknown)
	case <-time.After(15 * time.Second):
		t.Fatal("a heartbeat after the term's flush stopped was never answered")
	}
}
