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

// An MPI worker that atom stopped because its launcher's connection
// closed (reason LauncherGone) does not end the job: the launcher's own
// failure does, and its reason is the job's; a worker still running then
// is stopped as the job's end (JobEnded), not as cancelled.
func TestMPILauncherGone(t *testing.T) {
	l := newLogged(t, st.C64("c1"), st.C64("c2"))
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u1").Low().MPI(3).CPU(1, 1)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "m-1")
	byReplica := map[int]structs.TaskID{}
	for _, tk := range l.s.TasksOf("m-1") {
		byReplica[tk.Index] = tk.ID
	}
	require.Len(t, byReplica, 3)

	now := t0.Add(time.Minute)
	gone := "the launcher's connection closed (mpirun or its atom rsh ended) while what it launched here ran; atom stopped that: exit status 143"
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: byReplica[1], State: structs.TaskFailed, ExitCode: 143,
		Reason: structs.ReasonLauncherGone, Message: gone, Time: now}}})
	assert.Equal(t, structs.TaskFailed, l.s.Tasks[byReplica[1]].State)
	assert.Equal(t, "LauncherGone: "+gone, l.s.Tasks[byReplica[1]].Message)
	assert.Equal(t, structs.JobRunning, l.s.Jobs["m-1"].State, "the launcher's end decides")

	why := "atom rsh could not start Open MPI's daemon on replica 1 (task m-1-1-a0, node c2): launch on 127.0.0.1:40123: connection refused"
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: byReplica[0], State: structs.TaskFailed, ExitCode: 1, Message: why, Time: now}}})
	j := l.s.Jobs["m-1"]
	assert.Equal(t, structs.JobFailed, j.State)
	assert.Equal(t, "replica 0 failed with exit code 1: "+why, j.Reason)
	w2 := l.s.Tasks[byReplica[2]]
	assert.Equal(t, structs.TaskStopping, w2.State)
	assert.Equal(t, structs.StopJobEnded, w2.StopReason)

	// Refused: with a state other than Failed, with accelerators.
	for _, ev := range []structs.TaskEvent{
		{Task: byReplica[2], State: structs.TaskSucceeded, Reason: structs.ReasonLauncherGone, Time: now},
		{Task: byReplica[2], State: structs.TaskFailed, Reason: structs.ReasonLauncherGone, Accelerators: []int{0}, Time: now},
	} {
		_, err := l.do(&state.TaskUpdate{Events: []structs.TaskEvent{ev}})
		require.ErrorIs(t, err, state.ErrInvalid)
	}
}

// Elsewhere LauncherGone is an ordinary failure: the launcher of an MPI
// job, or a replica of another kind, ends the job naming itself.
func TestLauncherGoneOutsideMPIWorkers(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("g-1", st.NewJob("g", "u1").Low().Replicas(2).CPU(1, 1)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "g-1")
	tk := l.s.TasksOf("g-1")[1]
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskFailed, ExitCode: 143,
		Reason: structs.ReasonLauncherGone, Message: "x", Time: t0}}})
	assert.Equal(t, structs.JobFailed, l.s.Jobs["g-1"].State)
	assert.Equal(t, "replica 1 failed with exit code 143: x", l.s.Jobs["g-1"].Reason)
}
