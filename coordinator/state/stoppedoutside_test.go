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

// atom's report of a job it stopped after a SIGTERM the coordinator had
// not asked for (reason StoppedOutside): a running replica is lost, not
// crashed (placed again at once, no back-off); a task the coordinator was
// stopping ends as its stop. The reason is refused with other states or
// with accelerators.
func TestStoppedOutside(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	now := t0
	l.recycle(now)
	l.report(now, structs.TaskRunning, 0, "s-1")
	now = now.Add(time.Second)
	l.exit(now, structs.TaskFailed, 1) // one crash: the next would wait 10 s
	l.recycle(now)
	l.report(now, structs.TaskRunning, 0, "s-1")

	now = now.Add(time.Second)
	tk := l.live("s-1")
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskFailed, ExitCode: 143,
		Message: "killed by SIGTERM", Reason: structs.ReasonStoppedOutside, Time: now}}})
	got := l.s.Tasks[tk.ID]
	assert.Equal(t, structs.TaskLost, got.State)
	assert.Equal(t, 143, got.ExitCode)
	assert.Equal(t, "lost: atom got SIGTERM from outside the coordinator (a Pod deleted or evicted, a node shutting down, a kill by hand); the job then ended: killed by SIGTERM", got.Message)
	s := l.s.Jobs["s-1"]
	assert.Equal(t, 1, s.CrashLoop, "not a crash")
	assert.False(t, s.BackoffUntil.After(now), "no back-off")
	assert.Equal(t, "replica 0 was lost: atom got SIGTERM from outside the coordinator (a Pod deleted or evicted, a node shutting down, a kill by hand); the job then ended: killed by SIGTERM; placing it again", s.Reason)
	require.Len(t, l.recycle(now).Placed, 1, "placed again at once")
	l.report(now, structs.TaskRunning, 0, "s-1")

	// Refused: with Running, with accelerators.
	tk = l.live("s-1")
	for _, ev := range []structs.TaskEvent{
		{Task: tk.ID, State: structs.TaskRunning, Reason: structs.ReasonStoppedOutside, Time: now},
		{Task: tk.ID, State: structs.TaskFailed, Reason: structs.ReasonStoppedOutside, Accelerators: []int{0}, Time: now},
	} {
		_, err := l.do(&state.TaskUpdate{Events: []structs.TaskEvent{ev}})
		require.ErrorIs(t, err, state.ErrInvalid)
	}

	// The coordinator's own stop: the SIGTERM was its, the report ends it.
	l.must(&state.JobCancel{ID: "s-1", Now: now})
	require.Equal(t, structs.TaskStopping, l.s.Tasks[tk.ID].State)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskSucceeded,
		Reason: structs.ReasonStoppedOutside, Time: now}}})
	got = l.s.Tasks[tk.ID]
	assert.Equal(t, structs.TaskStopped, got.State, "its stop's end, whatever it exited with")
	assert.Equal(t, structs.StopCancelled, got.StopReason)
	assert.Empty(t, got.Message)
	assert.Equal(t, structs.JobCancelled, l.s.Jobs["s-1"].State)
}
