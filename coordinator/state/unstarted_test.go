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

// lost declares task id Lost, as a leader's reaper does after the TTL.
func (l *logged) lost(id structs.TaskID) {
	l.t.Helper()
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: id, State: structs.TaskLost, Time: t0, Message: "no heartbeat for 15s"}}})
}

// A task lost before it ever ran (its leader placed it and died before
// starting it; the new leader does not start what an earlier one placed)
// requeues its job as a new attempt, without using its restarts: a
// restartPolicy Never job does not fail (found by make chaos: a batch job
// failed because its leader was killed).
func TestLostBeforeStartRequeues(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	l.cycle(t0)
	first := l.live("b-1")
	require.Equal(t, structs.TaskScheduled, first.State)
	l.lost(first.ID)
	b := l.s.Jobs["b-1"]
	assert.Equal(t, structs.JobPending, b.State)
	assert.Equal(t, "requeued: replica 0 was lost before it started: no heartbeat for 15s", b.Reason)
	assert.Equal(t, 1, b.Attempt)
	assert.Equal(t, 1, b.LostUnstarted)
	l.cycle(t0)
	second := l.live("b-1")
	assert.NotEqual(t, first.ID, second.ID, "a new allocation")
	l.report(t0, structs.TaskRunning, 0, "b-1")
	l.report(t0, structs.TaskSucceeded, 0, "b-1")
	assert.Equal(t, structs.JobSucceeded, l.s.Jobs["b-1"].State)
}

// A task lost after it ran is the job's failure, as before: restartPolicy
// Never fails the job.
func TestLostAfterStartFails(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "b-1")
	id := l.live("b-1").ID
	l.lost(id)
	b := l.s.Jobs["b-1"]
	assert.Equal(t, structs.JobFailed, b.State)
	assert.Equal(t, "replica 0 was lost: no heartbeat for 15s", b.Reason)
	assert.Equal(t, "lost: no heartbeat for 15s", l.s.Tasks[id].Message, "the task keeps why it ended")
}

// Requeues after unstarted losses are bounded; they leave an OnFailure
// job's restarts whole.
func TestLostBeforeStartIsBounded(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 << 30}}})
	j := job("r-1", st.NewJob("r", "u1").CPU(1, 1))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	for range state.MaxUnstartedRequeues {
		l.cycle(t0)
		l.lost(l.live("r-1").ID)
		require.Equal(t, structs.JobPending, l.s.Jobs["r-1"].State)
	}
	later := t0.Add(10 * time.Minute) // past each restart's back-off (0, 10 s, 20 s)
	for i := range state.MaxRestarts {
		l.cycle(later)
		l.report(t0, structs.TaskRunning, 0, "r-1")
		l.report(t0, structs.TaskFailed, 1, "r-1")
		require.Equal(t, structs.JobPending, l.s.Jobs["r-1"].State, "restart %d", i+1)
	}
	l.cycle(later)
	l.lost(l.live("r-1").ID)
	r := l.s.Jobs["r-1"]
	assert.Equal(t, structs.JobFailed, r.State, "past MaxUnstartedRequeues a loss is a failure, and the restarts are used up")
	assert.Equal(t, "replica 0 was lost: no heartbeat for 15s (no restarts left: 3 of 3 used)", r.Reason)
}

// In a gang, the siblings of a replica lost before it started stop, then
// the gang is requeued whole, and its events say so without claiming a
// restart; a service's lost replica is placed again.
func TestLostBeforeStartGangAndService(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"), st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u1").Low().MPI(2).GPU("A", 8)), Now: t0})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	l.cycle(t0)
	tasks := l.s.TasksOf("m-1")
	require.Len(t, tasks, 2)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tasks[0].ID, State: structs.TaskRunning, Time: t0}}})
	l.lost(tasks[1].ID)
	assert.Equal(t, structs.TaskStopping, l.s.Tasks[tasks[0].ID].State)
	assert.Equal(t, structs.JobScheduled, l.s.Jobs["m-1"].State)
	l.report(t0, structs.TaskFailed, 143, "m-1")
	m := l.s.Jobs["m-1"]
	assert.Equal(t, structs.JobPending, m.State)
	assert.Equal(t, 1, m.Attempt)
	assert.Equal(t, "requeued: replica 1 was lost before it started: no heartbeat for 15s", m.Reason)
	assert.Equal(t, 0, m.Restarts())
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: low priority, 2 replica(s) of gpu/A=8",
		"+0 Placed m-1-0-a0: replica 0 placed on n1: cpu=96 memory=768Gi gpu/A=8 (accelerators 0,1,2,3,4,5,6,7)",
		"+0 Placed m-1-1-a0: replica 1 placed on n2: cpu=96 memory=768Gi gpu/A=8 (accelerators 0,1,2,3,4,5,6,7)",
		"+0 Started m-1-0-a0: replica 0 started on n1",
		"+0 Lost m-1-1-a0: replica 1 was lost: no heartbeat for 15s",
		"+0 Requeuing: replica 1 was lost before it started: no heartbeat for 15s; stopping 1 task(s) first, then pending again without using a restart",
		"+0 Stopped m-1-0-a0: replica 0 stopped (GangRestart) with exit code 143",
		"+0 Requeued: pending again as attempt 2: replica 1 was lost before it started: no heartbeat for 15s",
	}, l.events("m-1"))

	first := l.live("s-1")
	l.lost(first.ID)
	assert.Equal(t, 0, l.s.Jobs["s-1"].LostUnstarted)
	l.replace(t0)
	assert.NotEqual(t, first.ID, l.live("s-1").ID, "placed again")
}
