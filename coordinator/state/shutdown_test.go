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

// shutdown reports the live tasks of jobs as stopped by their
// coordinator's shutdown, in one update, as the daemon does.
func (l *logged) shutdown(now time.Time, jobs ...structs.JobID) {
	l.t.Helper()
	var ev []structs.TaskEvent
	for _, j := range jobs {
		for _, t := range l.s.TasksOf(j) {
			if t.State.HoldsResources() {
				ev = append(ev, structs.TaskEvent{Task: t.ID, State: structs.TaskLost, Reason: structs.ReasonShutdown, Time: now})
			}
		}
	}
	l.must(&state.TaskUpdate{Events: ev})
}

// A coordinator shutting down stops the tasks it runs: a batch job (a
// gang here, one replica still Scheduled) is Pending again as a new
// attempt, not Failed, its restarts are whole and its events say it is
// requeued, not restarted; a service's replica is placed again without a
// back-off, its event Requeuing as well. Every task it ended is Stopped
// for the shutdown (neither lost nor a gang restart, the sibling the
// first one's requeue stopped included), ended when the shutdown was
// recorded: the stopped processes' own reports, later, change nothing.
func TestShutdownRequeues(t *testing.T) {
	l := newLogged(t, st.C64("c1"), st.C64("c2"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 << 30}}})
	b := job("b-1", st.NewJob("b", "u1").MPI(2).CPU(1, 1))
	l.must(&state.JobSubmit{Job: b, Now: t0})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	l.recycle(t0)
	first := l.s.TasksOf("b-1")
	require.Len(t, first, 2)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: first[0].ID, State: structs.TaskRunning, Time: t0}}})
	l.report(t0, structs.TaskRunning, 0, "s-1")
	svcTask := l.live("s-1").ID

	now := t0.Add(time.Minute)
	l.shutdown(now, "b-1", "s-1")
	j := l.s.Jobs["b-1"]
	assert.Equal(t, structs.JobPending, j.State)
	assert.Equal(t, "requeued: stopped: coordinator shutting down", j.Reason)
	assert.Equal(t, 1, j.Attempt)
	assert.Equal(t, 0, j.Restarts(), "not a restart")
	for _, tk := range first {
		got := l.s.Tasks[tk.ID]
		assert.Equal(t, structs.TaskStopped, got.State, tk.ID)
		assert.Equal(t, structs.StopShutdown, got.StopReason, tk.ID)
		assert.Equal(t, "stopped: coordinator shutting down", got.Message, tk.ID)
		assert.Equal(t, now, got.EndedAt, tk.ID)
		assert.False(t, got.ExitReported(), "its process is stopped after: no exit code")
	}
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: normal priority, 2 replica(s) of cpu=1 memory=1Gi",
		"+0 Placed b-1-0-0001: replica 0 placed on c1: cpu=1 memory=1Gi",
		"+0 Placed b-1-1-0002: replica 1 placed on c1: cpu=1 memory=1Gi",
		"+0 Started b-1-0-0001: replica 0 started on c1",
		"+60 Stopped b-1-0-0001: replica 0 stopped: coordinator shutting down",
		"+60 Requeuing: stopped: coordinator shutting down; stopping 1 task(s) first, then pending again without using a restart",
		"+60 Stopped b-1-1-0002: replica 1 stopped: coordinator shutting down",
		"+60 Requeued: pending again as attempt 2: stopped: coordinator shutting down",
	}, l.events("b-1"))

	s := l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, "replica 0 stopped: coordinator shutting down; placing it again", s.Reason)
	assert.Zero(t, s.CrashLoop)
	assert.Zero(t, s.ReplicaRestarts, "not a restart")
	svc := l.s.Tasks[svcTask]
	assert.Equal(t, []any{structs.TaskStopped, structs.StopShutdown, "stopped: coordinator shutting down", now},
		[]any{svc.State, svc.StopReason, svc.Message, svc.EndedAt})
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: low priority, 1 replica(s) of cpu=1 memory=1Gi",
		"+0 Placed s-1-0-0003: replica 0 placed on c1: cpu=1 memory=1Gi",
		"+0 Started s-1-0-0003: replica 0 started on c1",
		"+0 Running: running: 1 replica(s) started",
		"+60 Stopped s-1-0-0003: replica 0 stopped: coordinator shutting down",
		"+60 Requeuing: replica 0 stopped: coordinator shutting down; placing it again without using a restart",
	}, l.events("s-1"))

	// The stopped processes report their ends as they exit, later: the
	// tasks had ended; nothing changes.
	before := l.json()
	var late []structs.TaskEvent
	for _, id := range []structs.TaskID{first[0].ID, first[1].ID, svcTask} {
		late = append(late, structs.TaskEvent{Task: id, State: structs.TaskFailed, ExitCode: 143, Time: now.Add(5 * time.Second)})
	}
	l.must(&state.TaskUpdate{Events: late})
	assert.Equal(t, before, l.json())

	// The next coordinator places both again.
	placed := l.recycle(now).Placed
	assert.Len(t, placed, 2)

	// Only the coordinator says so: with another state, or accelerators,
	// it is refused.
	tk := l.live("s-1")
	for _, ev := range []structs.TaskEvent{
		{Task: tk.ID, State: structs.TaskFailed, Reason: structs.ReasonShutdown, Time: now},
		{Task: tk.ID, State: structs.TaskLost, Reason: structs.ReasonShutdown, Accelerators: []int{0}, Time: now},
	} {
		_, err := l.do(&state.TaskUpdate{Events: []structs.TaskEvent{ev}})
		require.ErrorIs(t, err, state.ErrInvalid)
	}
	require.Error(t, state.CheckReason(structs.TaskEvent{Task: tk.ID, State: structs.TaskLost, Reason: structs.ReasonShutdown}),
		"an agent's heartbeat may not say so")
}
