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

// outage is atom's report of a job it stopped when no coordinator server
// answered for 15s.
const outage = "atom lost the coordinator for 15s and stopped the task; the job then ended: killed by SIGTERM"

// A task atom stopped because every coordinator server was down (reason
// CoordinatorLost) is lost through no fault of its job: a restartPolicy
// Never job is requeued, not Failed (found by a new user whose
// coordinator dev was down for 20 s), with its restarts whole; a
// service's replica is placed again at once; a task the coordinator was
// stopping ends its stop. The reason is refused with other states.
func TestDisconnectedRequeues(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "b-1", "s-1")
	first, svc := l.live("b-1").ID, l.live("s-1").ID

	now := t0.Add(time.Minute)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{
		{Task: first, State: structs.TaskFailed, ExitCode: 143, Message: outage, Reason: structs.ReasonDisconnected, Time: now},
		{Task: svc, State: structs.TaskFailed, ExitCode: 143, Message: outage, Reason: structs.ReasonDisconnected, Time: now},
	}})
	b := l.s.Jobs["b-1"]
	assert.Equal(t, structs.JobPending, b.State)
	assert.Equal(t, "requeued: replica 0 was lost: "+outage, b.Reason)
	assert.Equal(t, 1, b.Attempt)
	assert.Equal(t, 1, b.Interrupted)
	assert.Equal(t, 0, b.Restarts(), "not a restart")
	got := l.s.Tasks[first]
	assert.Equal(t, structs.TaskLost, got.State)
	assert.Equal(t, 143, got.ExitCode)
	assert.Equal(t, "lost: "+outage, got.Message)
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: low priority, 1 replica(s) of cpu=1 memory=1Gi",
		"+0 Placed b-1-0-0001: replica 0 placed on c1: cpu=1 memory=1Gi",
		"+0 Started b-1-0-0001: replica 0 started on c1",
		"+0 Running: running: 1 replica(s) started",
		"+60 Lost b-1-0-0001: replica 0 was lost: " + outage,
		"+60 Requeued: pending again as attempt 2: replica 0 was lost: " + outage,
	}, l.events("b-1"))

	s := l.s.Jobs["s-1"]
	assert.Equal(t, "replica 0 was lost: "+outage+"; placing it again", s.Reason)
	assert.Contains(t, l.events("s-1"), "+60 Requeuing: replica 0 was lost: "+outage+"; placing it again without using a restart")
	assert.Zero(t, s.CrashLoop)
	assert.Zero(t, s.ReplicaRestarts, "not a restart")
	require.Len(t, l.recycle(now).Placed, 2, "both placed again at once")

	// The coordinator's own stop: the report ends it.
	l.report(now, structs.TaskRunning, 0, "b-1")
	second := l.live("b-1").ID
	l.must(&state.JobCancel{ID: "b-1", Now: now})
	require.Equal(t, structs.TaskStopping, l.s.Tasks[second].State)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: second, State: structs.TaskFailed, ExitCode: 143, Message: outage, Reason: structs.ReasonDisconnected, Time: now}}})
	assert.Equal(t, structs.TaskStopped, l.s.Tasks[second].State, "stopped, not failed")
	assert.Equal(t, structs.StopCancelled, l.s.Tasks[second].StopReason)
	assert.Equal(t, structs.JobCancelled, l.s.Jobs["b-1"].State)

	// Refused: with Running, Lost, or accelerators.
	tk := l.live("s-1")
	for _, ev := range []structs.TaskEvent{
		{Task: tk.ID, State: structs.TaskRunning, Reason: structs.ReasonDisconnected, Time: now},
		{Task: tk.ID, State: structs.TaskLost, Reason: structs.ReasonDisconnected, Time: now},
		{Task: tk.ID, State: structs.TaskFailed, Reason: structs.ReasonDisconnected, Accelerators: []int{0}, Time: now},
	} {
		_, err := l.do(&state.TaskUpdate{Events: []structs.TaskEvent{ev}})
		require.ErrorIs(t, err, state.ErrInvalid)
	}
}
