package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// adoptingBackend is a fakeBackend that adopts every task
// (Capabilities.Adopts), as the Kubernetes backend does: what a Start did
// is visible to every server.
type adoptingBackend struct{ *fakeBackend }

func (adoptingBackend) Capabilities() backend.Capabilities {
	return backend.Capabilities{Adopts: func(backend.Launch) bool { return true }}
}

// A new leader starts the Scheduled tasks an earlier leader placed when
// its backend adopts them: the same allocation (task and token), not a
// new one after the heartbeat TTL. LeadingSince answers on the leader
// only, from when its term began.
func TestNewLeaderStartsAdoptedTasks(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.HeartbeatTTL = time.Hour })
	c.seed(st.C64("c1"))
	old := c.leader() // no backend: it places and starts nothing
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	require.Eventually(t, func() bool { return jobOf(old, "a-1").State == structs.JobScheduled }, waitFor, tick)
	first, tokens := tasksOf(old, "a-1")
	require.Len(t, first, 1)
	backends := map[string]*fakeBackend{}
	for _, s := range c.live() {
		if s != old {
			backends[s.ID()] = &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}}
			s.SetBackend(adoptingBackend{backends[s.ID()]})
			_, leads := s.LeadingSince()
			assert.False(t, leads, "a follower does not lead")
		}
	}
	before := time.Now()
	c.stop(c.index(old))
	nl := c.leader()
	require.Eventually(t, func() bool { _, ok, _, _ := backends[nl.ID()].seen(first[0].ID); return ok }, waitFor, tick,
		"the new leader never starts the task it inherited")
	tok, _, _, _ := backends[nl.ID()].seen(first[0].ID)
	assert.Equal(t, tokens[first[0].ID], tok, "the same allocation")
	ts, _ := tasksOf(nl, "a-1")
	require.Len(t, ts, 1, "no second allocation")
	assert.Equal(t, structs.TaskScheduled, ts[0].State)
	since, leads := nl.LeadingSince()
	require.True(t, leads)
	assert.False(t, since.Before(before), "the term began after the old leader stopped: %v < %v", since, before)
	assert.Equal(t, time.Hour, nl.HeartbeatTTL())
}

// stateAdopter adopts a task if the state holds it, reading the state as
// a backend may. Each call first has a write go through, so a
// call made under the state's read lock is caught rather than deadlocked:
// there the write waits for the lock, and a Read after it would wait for
// the write (a waiting writer holds new readers back), with the leader's
// scheduling loop, every reader and Raft's apply stuck behind them.
type stateAdopter struct {
	*fakeBackend
	srv     *server.Server
	blocked atomic.Int32 // calls during which a write could not go through
}

func (a *stateAdopter) Capabilities() backend.Capabilities {
	return backend.Capabilities{Adopts: func(l backend.Launch) bool { return a.adopts(l.Task) }}
}

func (a *stateAdopter) adopts(t *structs.Task) bool {
	if a.blocked.Load() > 0 {
		return false // the Read below would deadlock
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.srv.Apply(context.Background(), &state.JobCancel{ID: "no-such-job"}) // refused, but applied
	}()
	select {
	case <-done:
	case <-time.After(waitFor):
		a.blocked.Add(1)
		return false
	}
	found := false
	a.srv.Read(func(st *state.State) { found = st.Tasks[t.ID] != nil })
	return found
}

// A new leader asks its backend whether it adopts an inherited task
// outside the state's lock: the backend may read the state, and writes go
// on meanwhile. (Asked under the read lock, a Raft apply arriving between
// that lock and the backend's own read deadlocked the leader: its API
// answered no reads and its leader work never stopped.)
func TestAdoptsIsAskedOutsideTheStateLock(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.HeartbeatTTL = time.Hour })
	c.seed(st.C64("c1"))
	old := c.leader()
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	require.Eventually(t, func() bool { return jobOf(old, "a-1").State == structs.JobScheduled }, waitFor, tick)
	first, _ := tasksOf(old, "a-1")
	require.Len(t, first, 1)
	adopters := map[string]*stateAdopter{}
	for _, s := range c.live() {
		if s != old {
			adopters[s.ID()] = &stateAdopter{srv: s,
				fakeBackend: &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}}}
			s.SetBackend(adopters[s.ID()])
		}
	}
	c.stop(c.index(old))
	a := adopters[c.leader().ID()]
	require.Eventually(t, func() bool {
		_, ok, _, _ := a.seen(first[0].ID)
		return ok || a.blocked.Load() > 0
	}, 2*waitFor, tick, "the new leader never starts the task it inherited")
	require.Zero(t, a.blocked.Load(), "Adopts was called under the state's read lock: a write could not go through")
}
