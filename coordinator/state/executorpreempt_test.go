package state_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// sparkFull is spark job s-1 running its driver on n1, low job a-1 filling
// the rest of n1 and low job c-1 all of n2.
func sparkFull(t *testing.T) *logged {
	l := newLogged(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{structs.KeyCPU: 40000, structs.KeyMemory: 100 * st.Gi}}})
	l.must(&state.JobSubmit{Job: sparkJob("s-1", st.NewJob("s", "u1").Node("n1")), Now: t0})
	l.cycle(t0)
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u2").Low().CPU(14, 8).Node("n1")), Now: t0})
	l.must(&state.JobSubmit{Job: job("c-1", st.NewJob("c", "u2").Low().CPU(16, 8).Node("n2")), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1", "a-1", "c-1")
	return l
}

// preemptFor has executor Pod pod of s-1 preempt, as the leader does.
func (l *logged) preemptFor(pod string, now time.Time) (*state.ExecutorPreempt, error) {
	l.t.Helper()
	j, d := l.s.Jobs["s-1"], l.driverOf("s-1")
	ep := sched.ExecutorPod{Name: pod, Requests: j.Spark.ExecutorResources()}
	_, err := sched.PlaceExecutor(l.s.Snapshot(), j, d, ep)
	require.ErrorIs(l.t, err, sched.ErrNoRoom)
	pre, r, err := sched.PreemptForExecutor(l.s.Snapshot(), j, d, ep, now)
	if err != nil {
		return nil, err
	}
	c := &state.ExecutorPreempt{Job: j.ID, Driver: d.ID, Pod: pod, Preemptions: pre, Reservation: r, Now: now}
	_, err = l.do(c)
	return c, err
}

// restored is l's state through a snapshot: encoded and decoded as the
// FSM's Persist and Restore do.
func restored(t *testing.T, s *state.State) *state.State {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	r := state.New()
	require.NoError(t, json.Unmarshal(b, r))
	return r
}

// An executor's preemption is replicated: its victims stop, the room is
// held for the executor (through a snapshot and against a plan made before
// it), kept from the requeued victim, and taken by the executor: the
// fewest victims, then the least resources: a-1 (14 cores), not c-1 (16).
func TestExecutorPreempt(t *testing.T) {
	l := sparkFull(t)
	stale := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: t0})
	c, err := l.preemptFor("exec-1", t0)
	require.NoError(t, err)
	assert.Equal(t, []sched.Preemption{{Victim: "a-1", Preemptor: "s-1", Tasks: []structs.TaskID{"a-1-0-a0"}}}, c.Preemptions)
	want := sched.Reservation{Job: "s-1", Node: "n1", Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi},
		Kind: sched.ReserveExecutor, Executor: "exec-1", Made: uint64(len(l.log))}
	assert.Equal(t, []sched.Reservation{want}, l.s.Reservations)
	assert.Equal(t, structs.TaskStopping, l.s.Tasks["a-1-0-a0"].State)
	assert.Equal(t, "preempted by s-1", l.s.Jobs["a-1"].Reason)
	assert.Equal(t, structs.TaskRunning, l.s.Tasks["c-1-0-a0"].State)

	// Once: the same again is refused and changes nothing.
	_, err = l.do(c)
	require.ErrorIs(t, err, state.ErrExists)
	assert.Equal(t, []sched.Reservation{want}, l.s.Reservations)
	// A plan made before it did not see it: committing it keeps it.
	stale.Pending = nil
	l.must(&state.PlanCommit{Plan: stale, Now: t0})
	assert.Equal(t, []sched.Reservation{want}, l.s.Reservations)
	assert.Equal(t, []sched.Reservation{want}, restored(t, l.s).Reservations)

	l.cycle(t0)
	assert.Equal(t, []sched.Reservation{want}, l.s.Reservations, "kept while a-1 stops")
	l.report(t0.Add(time.Second), structs.TaskFailed, 143, "a-1")
	assert.Equal(t, structs.JobPending, l.s.Jobs["a-1"].State)
	now := t0.Add(2 * time.Second)
	assert.Empty(t, l.cycle(now).Placed, "the room is the executor's, not a-1's")
	want.Freed = now
	assert.Equal(t, []sched.Reservation{want}, l.s.Reservations)
	back := restored(t, l.s)
	assert.Equal(t, []sched.Reservation{want}, back.Reservations)
	assert.Equal(t, l.s.Snapshot().Reservations, back.Snapshot().Reservations)

	// The executor takes it (pkg/sched's tests show no other can).
	j, d := l.s.Jobs["s-1"], l.driverOf("s-1")
	req := j.Spark.ExecutorResources()
	tp, err := sched.PlaceExecutor(l.s.Snapshot(), j, d, sched.ExecutorPod{Name: "exec-1", Requests: req})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("n1"), tp.Node)
	l.must(&state.ExecutorAdd{Job: j.ID, Driver: d.ID, Pod: "exec-1", Node: tp.Node, Pool: tp.Pool,
		Requests: &req, Resources: tp.Resources, Accels: tp.Accels, Token: "tok", Now: now})
	assert.Empty(t, l.s.Reservations, "taken")
	assert.Empty(t, l.cycle(now).Placed, "a-1 (14 cores) waits")
}

// Room held for an executor that never comes lapses ExecutorHold after
// its victims have stopped; then the victim is placed again.
func TestExecutorReservationExpires(t *testing.T) {
	l := sparkFull(t)
	_, err := l.preemptFor("exec-1", t0)
	require.NoError(t, err)
	l.report(t0, structs.TaskFailed, 143, "a-1")
	l.cycle(t0)
	require.Len(t, l.s.Reservations, 1)
	l.s = restored(t, l.s)
	l.cycle(t0.Add(sched.ExecutorHold - time.Second))
	require.Len(t, l.s.Reservations, 1)
	assert.Empty(t, l.cycle(t0.Add(sched.ExecutorHold)).Placed)
	assert.Empty(t, l.s.Reservations, "lapsed")
	assert.Equal(t, []structs.JobID{"a-1"}, l.cycle(t0.Add(sched.ExecutorHold)).Placed)

	// A job that ends drops its executors' rooms.
	l = sparkFull(t)
	_, err = l.preemptFor("exec-1", t0)
	require.NoError(t, err)
	l.must(&state.JobCancel{ID: "s-1", Now: t0})
	assert.Empty(t, l.s.Reservations)
}

// Refused, changing nothing: a low job's executor, a victim that is not
// low, a reservation for another Pod.
func TestExecutorPreemptRefused(t *testing.T) {
	l := sparkFull(t)
	j, d := l.s.Jobs["s-1"], l.driverOf("s-1")
	r := sched.Reservation{Job: j.ID, Node: "n2", Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, Kind: sched.ReserveExecutor, Executor: "exec-1"}
	snapshot := func() string {
		c := l.s.Clone()
		c.Index = 0 // every command raises it
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return string(b)
	}
	before := snapshot()
	for _, c := range []*state.ExecutorPreempt{
		{Job: j.ID, Driver: d.ID, Pod: "exec-1", Preemptions: []sched.Preemption{{Victim: "s-1", Preemptor: "s-1"}}, Reservation: r},
		{Job: j.ID, Driver: d.ID, Pod: "exec-1", Preemptions: []sched.Preemption{{Victim: "c-1", Preemptor: "s-1"}}, Reservation: sched.Reservation{Job: j.ID, Node: "n2", Kind: sched.ReserveExecutor, Executor: "exec-2"}},
		{Job: "c-1", Driver: "c-1-0-a0", Pod: "exec-1", Preemptions: []sched.Preemption{{Victim: "a-1", Preemptor: "c-1"}}, Reservation: r},
	} {
		_, err := l.do(c)
		require.ErrorIs(t, err, state.ErrInvalid)
	}
	assert.JSONEq(t, before, snapshot())
}
