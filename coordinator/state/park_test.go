package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// tasksIn counts job id's tasks per state.
func (l *logged) tasksIn(id structs.JobID) map[structs.TaskState]int {
	n := map[structs.TaskState]int{}
	for _, tk := range l.s.TasksOf(id) {
		n[tk.State]++
	}
	return n
}

// plan schedules without committing.
func (l *logged) plan(now time.Time) *sched.Plan {
	return sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now})
}

// A service scaled to 0 is parked: its replicas stop (ScaledDown, not
// failed), its charge drops to 0, it stays Running with its spec, and
// nothing places, times out or backs it off. Scaled up it is pending as
// at submit: within quota, minAvailable first.
func TestServiceScaleToZeroAndBack(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Service(4, 2).GPU("A", 1)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	require.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)
	assert.Equal(t, int64(4), l.s.Usage["user:u1"]["gpu/A"])

	l.must(&state.ServiceScale{ID: "s-1", Replicas: 0, Now: t0.Add(time.Minute)})
	s := l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, state.ParkedReason, s.Reason)
	assert.Equal(t, 0, s.Replicas)
	assert.Equal(t, 2, s.MinAvailable, "the spec stays")
	assert.Nil(t, s.Charged)
	assert.Empty(t, l.s.Usage["user:u1"], "the quota is released at once")
	assert.Equal(t, map[structs.TaskState]int{structs.TaskStopping: 4}, l.tasksIn("s-1"))
	for _, tk := range l.s.TasksOf("s-1") {
		assert.Equal(t, structs.StopScaled, tk.StopReason)
	}
	assert.Empty(t, l.s.Pending())

	// SIGTERM ends them (143): stopped, not failed; no restart, no back-off.
	l.report(t0.Add(time.Minute+5*time.Second), structs.TaskFailed, 143, "s-1")
	s = l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, state.ParkedReason, s.Reason)
	assert.Zero(t, s.ReplicaRestarts)
	assert.Zero(t, s.CrashLoop)
	assert.True(t, s.BackoffUntil.IsZero())
	assert.Equal(t, 0, s.Attempt)
	assert.Empty(t, l.s.Snapshot().Tasks, "nothing held")

	// A day later: nothing pending, no timeout.
	p := l.plan(t0.Add(24 * time.Hour))
	assert.Empty(t, p.Placements)
	assert.Empty(t, p.Timeouts)
	assert.Empty(t, p.Pending)

	// Scaling up: below minAvailable is refused; over quota is refused;
	// either leaves it parked.
	_, err := l.do(&state.ServiceScale{ID: "s-1", Replicas: 1, Now: t0.Add(24 * time.Hour)})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.EqualError(t, err, "replicas 1 is below minAvailable 2: scale to 2 or more, or to 0 to park the service")
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").GPU("A", 6)), Now: t0.Add(24 * time.Hour)})
	_, err = l.do(&state.ServiceScale{ID: "s-1", Replicas: 3, Now: t0.Add(24 * time.Hour)})
	assert.EqualError(t, err, "quota exceeded for user:u1: gpu/A quota 8, in use 6, requested 3")
	s = l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, 0, s.Replicas)
	assert.Nil(t, s.Charged)

	// Scaling to the size it has changes nothing, decided as it is
	// applied (a server answering from a lagging state cannot tell): no
	// event, no quota check.
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 0, Now: t0.Add(24 * time.Hour)})
	for _, e := range l.s.Events["s-1"].Events {
		assert.NotEqual(t, "scaled from 0 to 0 replicas; parked ("+state.ParkedReason+")", e.Message)
	}
	assert.Equal(t, 0, l.s.Jobs["s-1"].Replicas)

	up := t0.Add(24*time.Hour + time.Minute)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 2, Now: up})
	s = l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobPending, s.State)
	assert.Equal(t, up, s.PendingSince, "pendingTimeout counts from the scale")
	assert.Empty(t, s.Reason)
	assert.Equal(t, structs.ResourceList{"gpu/A": 2}, s.Charged)
	assert.Equal(t, int64(8), l.s.Usage["user:u1"]["gpu/A"])
	cr := l.recycle(up)
	assert.Equal(t, []structs.JobID{"b-1", "s-1"}, cr.Placed)
	assert.Equal(t, map[structs.TaskState]int{structs.TaskStopped: 4, structs.TaskScheduled: 2}, l.tasksIn("s-1"))
	assert.Equal(t, structs.JobScheduled, l.s.Jobs["s-1"].State)
	l.report(up.Add(time.Second), structs.TaskRunning, 0, "s-1")
	assert.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)
}

// A pending service parked is no longer pending: its pendingTimeout does
// not fire while parked, and counts afresh once it is scaled up.
func TestParkedServiceDoesNotTimeOut(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}})
	l.must(&state.JobSubmit{Job: job("hog-1", st.NewJob("hog", "u1").GPU("A", 8)), Now: t0})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Service(2, 1).GPU("A", 1).Timeout(time.Hour)), Now: t0})
	l.recycle(t0)
	require.Equal(t, structs.JobPending, l.s.Jobs["s-1"].State)
	assert.Equal(t, int64(10), l.s.Usage["user:u1"]["gpu/A"])

	l.must(&state.ServiceScale{ID: "s-1", Replicas: 0, Now: t0.Add(time.Minute)})
	assert.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)
	assert.Equal(t, int64(8), l.s.Usage["user:u1"]["gpu/A"])
	p := l.plan(t0.Add(3 * time.Hour))
	assert.Empty(t, p.Timeouts)
	assert.NotContains(t, p.Pending, structs.JobID("s-1"))

	up := t0.Add(3 * time.Hour)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 2, Now: up})
	p = l.plan(up.Add(59 * time.Minute))
	assert.Empty(t, p.Timeouts, "an hour from the scale, not from submit")
	assert.Contains(t, p.Pending, structs.JobID("s-1"))
	p = l.plan(up.Add(time.Hour))
	require.Len(t, p.Timeouts, 1)
	assert.Equal(t, structs.JobID("s-1"), p.Timeouts[0].Job)
	assert.Equal(t, structs.ReasonPendingTimeout, p.Timeouts[0].Reason)
}

// Parking ends a crash loop: scaled up again, the replica is placed at
// once, not after the back-off it was waiting for.
func TestParkingClearsRestartBackoff(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	now := t0
	for range 3 {
		if b := l.s.Jobs["s-1"].BackoffUntil; now.Before(b) {
			now = b
		}
		l.recycle(now)
		l.report(now, structs.TaskRunning, 0, "s-1")
		now = now.Add(time.Second)
		l.exit(now, structs.TaskFailed, 1)
	}
	s := l.s.Jobs["s-1"]
	require.Equal(t, 3, s.CrashLoop)
	require.Equal(t, now.Add(20*time.Second), s.BackoffUntil)

	l.must(&state.ServiceScale{ID: "s-1", Replicas: 0, Now: now})
	s = l.s.Jobs["s-1"]
	assert.Zero(t, s.CrashLoop)
	assert.True(t, s.BackoffUntil.IsZero())
	assert.Equal(t, state.ParkedReason, s.Reason)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 1, Now: now})
	assert.Len(t, l.recycle(now).Placed, 1, "placed at once")
}

// A service scaled to 0 while it is being preempted stays parked once
// its replicas have stopped: it is not requeued, nor counted preempted.
func TestParkedWhilePreemptedStaysParked(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("low-1", st.NewJob("low", "u2").Low().Service(2, 2).GPU("A", 4)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "low-1")
	l.must(&state.JobSubmit{Job: job("norm-1", st.NewJob("norm", "u1").GPU("A", 8)), Now: t0})
	l.recycle(t0)
	require.Equal(t, map[structs.TaskState]int{structs.TaskStopping: 2}, l.tasksIn("low-1"))
	require.Len(t, l.s.Reservations, 1)

	l.must(&state.ServiceScale{ID: "low-1", Replicas: 0, Now: t0.Add(time.Second)})
	l.report(t0.Add(10*time.Second), structs.TaskFailed, 143, "low-1")
	low := l.s.Jobs["low-1"]
	assert.Equal(t, structs.JobRunning, low.State)
	assert.Equal(t, state.ParkedReason, low.Reason)
	assert.Equal(t, 0, low.Attempt)
	assert.Equal(t, 0, low.Preemptions)
	cr := l.recycle(t0.Add(11 * time.Second))
	assert.Equal(t, []structs.JobID{"norm-1"}, cr.Placed)
}

// Only services scale; batch jobs say so, and a count outside 0..10000
// is refused. Neither changes anything.
func TestScaleRefusals(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.JobSubmit{Job: job("c-1", st.NewJob("c", "u1").Low().Replicas(2).GPU("A", 1)), Now: t0})
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u1").Low().MPI(2).GPU("A", 1)), Now: t0})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).GPU("A", 1)), Now: t0})
	for id, kind := range map[structs.JobID]string{"c-1": "command", "m-1": "mpi"} {
		_, err := l.do(&state.ServiceScale{ID: id, Replicas: 0, Now: t0})
		require.ErrorIs(t, err, state.ErrInvalid)
		assert.EqualError(t, err, "job "+string(id)+" is a "+kind+" job: only services scale (cancel it to stop it)")
		assert.Equal(t, structs.JobPending, l.s.Jobs[id].State)
	}
	_, err := l.do(&state.ServiceScale{ID: "s-1", Replicas: -1, Now: t0})
	assert.EqualError(t, err, "replicas -1 is not allowed: use 0 (park the service) to 10000")
	assert.Equal(t, 1, l.s.Jobs["s-1"].Replicas)
}
