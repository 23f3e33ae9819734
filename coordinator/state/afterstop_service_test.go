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

// end reports task id ended at now, as its agent (or the coordinator,
// with reason) does.
func (l *logged) end(now time.Time, id structs.TaskID, s structs.TaskState, code int, reason string) {
	l.t.Helper()
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: id, State: s, ExitCode: code, Reason: reason, Time: now}}})
}

// partlyPreempted is low service s-1 running 4 replicas on n1 and n2,
// normal job n-1 having preempted the 2 on n1: it returns them
// (stopping) and the 2 that run on.
func partlyPreempted(t *testing.T) (l *logged, preempted, others []structs.TaskID) {
	l = newLogged(t, st.GPUNode("n1", "A", 2), st.GPUNode("n2", "A", 2))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 2}}})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u9").Low().Service(4, 1).GPU("A", 1)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").GPU("A", 2)), Now: t0.Add(time.Minute)})
	p := l.plan(t0.Add(time.Minute))
	require.Len(t, p.Preemptions, 1)
	require.True(t, p.Preemptions[0].Replicas, "only some of its replicas")
	p.Pending = nil
	l.must(&state.PlanCommit{Plan: p, Now: t0.Add(time.Minute)})
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.State == structs.TaskStopping {
			preempted = append(preempted, tk.ID)
		} else {
			others = append(others, tk.ID)
		}
	}
	require.Len(t, preempted, 2)
	return l, preempted, others
}

// A service that lost some replicas to a preemption runs on when the
// others end too (they exit, are lost or their coordinator shuts down),
// whichever ends last: the preempted ones ending last do not requeue it
// as if preempted whole (a new attempt, Pending, a preemption counted,
// its reason and back-off replaced). The cycle places its replicas again.
func TestServicePartlyPreemptedRunsOnWhateverEndsLast(t *testing.T) {
	for _, c := range []struct {
		name   string
		state  structs.TaskState
		code   int
		reason string
	}{
		{"exit", structs.TaskFailed, 1, ""},
		{"lost", structs.TaskLost, 0, ""},
		{"shutdown", structs.TaskLost, 0, structs.ReasonShutdown},
	} {
		t.Run(c.name, func(t *testing.T) {
			var jobs []structs.Job
			for _, preemptedLast := range []bool{false, true} {
				l, preempted, others := partlyPreempted(t)
				now := t0.Add(2 * time.Minute)
				ends := func(ids []structs.TaskID, s structs.TaskState, code int, reason string) {
					for _, id := range ids {
						l.end(now, id, s, code, reason)
					}
				}
				if !preemptedLast {
					ends(preempted, structs.TaskFailed, 143, "")
				}
				ends(others, c.state, c.code, c.reason)
				if preemptedLast {
					ends(preempted, structs.TaskFailed, 143, "")
				}
				s := l.s.Jobs["s-1"]
				assert.Equal(t, structs.JobRunning, s.State, "preempted last: %v", preemptedLast)
				assert.Zero(t, s.Attempt, "preempted last: %v", preemptedLast)
				assert.Zero(t, s.Preemptions, "preempted last: %v", preemptedLast)
				assert.NotContains(t, l.events("s-1")[len(l.events("s-1"))-1], "Requeued")
				assert.Contains(t, l.s.Pending(), s, "its replicas are placed again")
				jobs = append(jobs, *s)
			}
			assert.Equal(t, jobs[0], jobs[1], "the same whichever ended last")
		})
	}
}

// A service parked while some of its replicas stop for a preemption,
// then scaled up before they have stopped, is Pending as at its unpark:
// their end does not requeue it as a new attempt nor count a preemption.
func TestServiceUnparkedWhilePreemptedReplicasStop(t *testing.T) {
	l, preempted, others := partlyPreempted(t)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 0, Now: t0.Add(90 * time.Second)})
	for _, id := range others {
		l.end(t0.Add(95*time.Second), id, structs.TaskFailed, 143, "")
	}
	unpark := t0.Add(100 * time.Second)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 2, Now: unpark})
	for _, id := range preempted {
		l.end(t0.Add(110*time.Second), id, structs.TaskFailed, 143, "")
	}
	s := l.s.Jobs["s-1"]
	assert.Equal(t, []any{structs.JobPending, "", 0, 0, unpark}, []any{s.State, s.Reason, s.Attempt, s.Preemptions, s.PendingSince})
	evs := l.events("s-1")
	assert.Equal(t, "+110 Stopped s-1-1-0002: replica 1 stopped (Preempted) with exit code 143", evs[len(evs)-1])
}

// A service preempted whole by a plan made before one of its replicas
// was scaled down (that one stopping ScaledDown, the other Preempted) is
// requeued as preempted, whichever of the two ends last.
func TestServicePreemptedWholeWhileScaledDown(t *testing.T) {
	for _, scaledLast := range []bool{false, true} {
		l := newLogged(t, st.C64("c1"))
		l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 * st.Gi}}})
		l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u9").Low().Service(2, 1).CPU(30, 8)), Now: t0})
		l.recycle(t0)
		l.report(t0, structs.TaskRunning, 0, "s-1")
		l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").CPU(60, 8)), Now: t0.Add(time.Minute)})
		p := l.plan(t0.Add(time.Minute))
		require.Equal(t, []sched.Preemption{{Victim: "s-1", Preemptor: "n-1", Tasks: []structs.TaskID{"s-1-1-0002", "s-1-0-0001"}}}, p.Preemptions, "whole, newest first")
		p.Pending = nil
		l.must(&state.ServiceScale{ID: "s-1", Replicas: 1, Now: t0.Add(time.Minute)})
		l.must(&state.PlanCommit{Plan: p, Now: t0.Add(time.Minute)})
		stop := map[structs.StopReason]structs.TaskID{}
		for _, tk := range l.s.TasksOf("s-1") {
			require.Equal(t, structs.TaskStopping, tk.State)
			stop[tk.StopReason] = tk.ID
		}
		require.Len(t, stop, 2, "one ScaledDown, one Preempted")
		first, last := stop[structs.StopScaled], stop[structs.StopPreempted]
		if scaledLast {
			first, last = last, first
		}
		l.end(t0.Add(2*time.Minute), first, structs.TaskFailed, 143, "")
		l.end(t0.Add(2*time.Minute), last, structs.TaskFailed, 143, "")
		s := l.s.Jobs["s-1"]
		assert.Equal(t, []any{structs.JobPending, structs.ReasonPreempted, 1, 1}, []any{s.State, s.Reason, s.Attempt, s.Preemptions}, "scaled last: %v", scaledLast)
		assert.Empty(t, s.AttemptStop)
		evs := l.events("s-1")
		assert.Equal(t, "+120 Requeued: pending again as attempt 2: Preempted", evs[len(evs)-1])
	}
}
