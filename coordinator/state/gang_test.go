package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A gang replica may end before a sibling reports Running (its report was
// delayed by a failover): the gang was placed whole, and the invariants
// hold at every index (found by make chaos's replay).
func TestGangReplicaEndsBeforeSiblingRuns(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("g-1", st.NewJob("g", "u1").Low().Replicas(3).CPU(1, 1)), Now: t0})
	l.cycle(t0)
	ts := l.s.TasksOf("g-1")
	require.Len(t, ts, 3)
	ev := func(id structs.TaskID, s structs.TaskState) structs.TaskEvent {
		return structs.TaskEvent{Task: id, State: s, Time: t0}
	}
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{ev(ts[0].ID, structs.TaskRunning), ev(ts[2].ID, structs.TaskRunning)}})
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{ev(ts[2].ID, structs.TaskSucceeded)}})
	assert.Equal(t, structs.JobScheduled, l.s.Jobs["g-1"].State)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{ev(ts[1].ID, structs.TaskRunning)}})
	assert.Equal(t, structs.JobRunning, l.s.Jobs["g-1"].State)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{ev(ts[0].ID, structs.TaskSucceeded), ev(ts[1].ID, structs.TaskSucceeded)}})
	assert.Equal(t, structs.JobSucceeded, l.s.Jobs["g-1"].State)
}

// A gang replica stopped because another failed ended Stopped, with the
// stop's reason and what it exited with, whatever that was: it did not
// fail itself. Only the replica that failed is Failed, whether the job
// restarts (GangRestart) or ends (JobEnded).
func TestGangSiblingStoppedNotFailed(t *testing.T) {
	for _, policy := range []structs.RestartPolicy{structs.RestartOnFailure, structs.RestartNever} {
		t.Run(string(policy), func(t *testing.T) {
			l := newLogged(t, st.C64("c1"))
			j := job("g-1", st.NewJob("g", "u1").Low().Replicas(2).CPU(1, 1))
			j.RestartPolicy = policy
			l.must(&state.JobSubmit{Job: j, Now: t0})
			l.cycle(t0)
			l.report(t0, structs.TaskRunning, 0, "g-1")
			l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "g-1-1-a0", State: structs.TaskFailed, ExitCode: 2, Time: t0.Add(5 * time.Second)}}})
			l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "g-1-0-a0", State: structs.TaskFailed, ExitCode: 143, Time: t0.Add(6 * time.Second)}}})

			stop, job := structs.StopGang, structs.JobPending
			if policy == structs.RestartNever {
				stop, job = structs.StopJobEnded, structs.JobFailed
			}
			assert.Equal(t, job, l.s.Jobs["g-1"].State)
			failed, stopped := l.s.Tasks["g-1-1-a0"], l.s.Tasks["g-1-0-a0"]
			assert.Equal(t, []any{structs.TaskFailed, structs.StopReason(""), 2}, []any{failed.State, failed.StopReason, failed.ExitCode})
			assert.Equal(t, []any{structs.TaskStopped, stop, 143, t0.Add(6 * time.Second)},
				[]any{stopped.State, stopped.StopReason, stopped.ExitCode, stopped.EndedAt})
			assert.True(t, stopped.ExitReported())
			assert.Contains(t, l.events("g-1"), "+6 Stopped g-1-0-a0: replica 0 stopped ("+string(stop)+") with exit code 143")
		})
	}
}
