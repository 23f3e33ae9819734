package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// exit reports the live replica of service s-1 ended at now.
func (l *logged) exit(now time.Time, st structs.TaskState, code int) structs.TaskID {
	l.t.Helper()
	tk := l.live("s-1")
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: st, ExitCode: code, Time: now}}})
	return tk.ID
}

// recycle schedules like cycle, naming each task uniquely as the
// leader does (a replica placed again gets a new task).
func (l *logged) recycle(now time.Time) state.CommitResult {
	l.t.Helper()
	p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now})
	p.Pending = nil
	for _, pl := range p.Placements {
		for i := range pl.Tasks {
			l.seq++
			pl.Tasks[i].ID = structs.NewTaskID(pl.Job, pl.Tasks[i].Index, fmt.Sprintf("%04x", l.seq))
		}
	}
	return l.must(&state.PlanCommit{Plan: p, Now: now}).(state.CommitResult)
}

// A crash-looping service replica is placed again at once, then after
// 10 s, 20 s, 40 s ... (capped at 5 minutes), as the kubelet's
// CrashLoopBackOff; the scheduler says why it waits. A replica that ran
// 10 minutes resets the count; a lost replica (not the service's fault)
// waits for nothing.
func TestServiceRestartBackoff(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	now := t0
	l.recycle(now)
	l.report(now, structs.TaskRunning, 0, "s-1")

	wantWait := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second}
	for i, wait := range wantWait {
		now = now.Add(time.Second)
		l.exit(now, structs.TaskFailed, 1)
		s := l.s.Jobs["s-1"]
		require.Equal(t, i+1, s.CrashLoop)
		require.Equal(t, now.Add(wait), s.BackoffUntil, "exit %d", i+1)
		if wait > 0 {
			assert.Contains(t, s.Reason, "replica 0 failed with exit code 1; placing it again after a back-off of "+wait.String())
			p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now.Add(wait - time.Second)})
			assert.Empty(t, p.Placements, "not before the back-off ends")
			require.Contains(t, p.Pending, structs.JobID("s-1"))
			assert.Contains(t, p.Pending["s-1"].Message, fmt.Sprintf("restart back-off: %d replica exits in a row", i+1))
			now = now.Add(wait)
		}
		require.Len(t, l.recycle(now).Placed, 1, "placed again once the back-off ended")
		l.report(now, structs.TaskRunning, 0, "s-1")
	}
	assert.Equal(t, 4, l.s.Jobs["s-1"].ReplicaRestarts)
	assert.Equal(t, 5*time.Minute, structs.RestartBackoff(40), "capped")

	// Ten minutes of running resets the count: the next exit restarts at once.
	now = now.Add(10 * time.Minute)
	l.exit(now, structs.TaskSucceeded, 0)
	s := l.s.Jobs["s-1"]
	assert.Equal(t, 1, s.CrashLoop)
	assert.Equal(t, now, s.BackoffUntil)
	assert.Equal(t, "replica 0 exited 0; placing it again", s.Reason)
	l.recycle(now)
	l.report(now, structs.TaskRunning, 0, "s-1")

	// Lost is not a crash.
	l.exit(now.Add(time.Second), structs.TaskLost, 0)
	s = l.s.Jobs["s-1"]
	assert.Equal(t, 1, s.CrashLoop)
	assert.Equal(t, now, s.BackoffUntil)
	require.Len(t, l.recycle(now.Add(time.Second)).Placed, 1)
}

// A service keeps only its newest KeepEndedReplicas ended tasks.
func TestServicePrunesEndedReplicas(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	var ended []structs.TaskID
	now := t0
	for range state.KeepEndedReplicas + 3 {
		l.recycle(now)
		l.report(now, structs.TaskRunning, 0, "s-1")
		now = now.Add(time.Hour) // past the reset: no back-off
		ended = append(ended, l.exit(now, structs.TaskFailed, 1))
	}
	var kept []structs.TaskID
	for _, tk := range l.s.TasksOf("s-1") {
		kept = append(kept, tk.ID)
	}
	assert.ElementsMatch(t, ended[3:], kept, "the newest %d ended tasks", state.KeepEndedReplicas)
	for _, id := range ended[:3] {
		assert.NotContains(t, l.s.Tasks, id)
		assert.NotContains(t, l.s.Tokens, id)
	}
	assert.Equal(t, state.KeepEndedReplicas+3, l.s.Jobs["s-1"].ReplicaRestarts)
}

// A batch job with restartPolicy OnFailure restarts at once the first
// time, then after 10 s, 20 s ...: a job failing at start does not spend
// its restarts in a second (found by a new user: a warm-up with no source
// used all three restarts in under a second).
func TestBatchRestartBackoff(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	j := job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	now := t0
	for i, wait := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		require.Len(t, l.recycle(now).Placed, 1, "restart %d", i)
		l.report(now, structs.TaskRunning, 0, "b-1")
		l.report(now, structs.TaskFailed, 1, "b-1")
		b := l.s.Jobs["b-1"]
		require.Equal(t, structs.JobPending, b.State)
		require.Equal(t, now.Add(wait), b.BackoffUntil, "failure %d", i+1)
		if wait > 0 {
			p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now.Add(wait - time.Second)})
			assert.Empty(t, p.Placements, "not before the back-off ends")
			assert.Contains(t, p.Pending["b-1"].Message, fmt.Sprintf("restart back-off: attempt %d (restart %d of 3) waits until", i+2, i+1))
		}
		now = now.Add(wait)
	}
}

// A service's reason about a replica it places again ("replica 1 was
// lost ...; placing it again") goes once that replica runs again: it
// stayed on a service running whole (found by a new user).
func TestServiceReasonClearsWhenTheReplicaIsBack(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(2, 2).CPU(1, 1)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	require.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)

	var one *structs.Task
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.Index == 1 {
			one = tk
		}
	}
	now := t0.Add(time.Minute)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: one.ID, State: structs.TaskLost, Message: "no heartbeat for 15s", Time: now}}})
	s := l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, "replica 1 was lost: no heartbeat for 15s; placing it again", s.Reason)
	require.Len(t, l.recycle(now).Placed, 1)
	assert.Equal(t, "replica 1 was lost: no heartbeat for 15s; placing it again", l.s.Jobs["s-1"].Reason, "placed, not running yet")

	for _, tk := range l.s.TasksOf("s-1") {
		if tk.Index == 1 && tk.State == structs.TaskScheduled {
			l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskRunning, Time: now}}})
		}
	}
	s = l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Empty(t, s.Reason, "replica 1 runs again")
}
