package state_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// What follows a job's stop is decided when the stop is ordered, the
// first one ordered winning, never by which of its tasks ends last or
// what that one was stopped for (afterStop).

// A low spark job (restartPolicy OnFailure) running its driver and two
// executors on n1, where normal job n-1 wants all of n1.
func sparkVictim(t *testing.T) *logged {
	l := kubeLogged(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
	s := twoExecutors("s-1", st.NewJob("s", "u9").Low().Node("n1"))
	s.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: s, Now: t0})
	l.cycle(t0)
	for _, pod := range []string{"s-exec-1", "s-exec-2"} {
		_, err := l.executor("s-1", pod, t0)
		require.NoError(t, err)
	}
	l.report(t0, structs.TaskRunning, 0, "s-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").CPU(16, 8).Node("n1")), Now: t0.Add(time.Minute)})
	return l
}

// A spark driver that fails as its job is preempted: whichever the
// coordinator learnt first decides. Failed first, the job restarts
// (using a restart), its executors stopping for the gang restart, and
// the preemption, planned before, finds nothing left to stop: it records
// nothing and leaves the job's reason. Preempted first, the driver's
// exit is the end of its stop: requeued as preempted, no restart used.
func TestSparkDriverFailsAsItIsPreempted(t *testing.T) {
	now := t0.Add(time.Minute)
	t.Run("failed first", func(t *testing.T) {
		l := sparkVictim(t)
		p := l.plan(now)
		require.Len(t, p.Preemptions, 1)
		p.Pending = nil
		l.end(now, l.driverOf("s-1").ID, structs.TaskFailed, 1, "")
		evs := len(l.events("s-1"))
		l.must(&state.PlanCommit{Plan: p, Now: now})
		assert.Len(t, l.events("s-1"), evs, "nothing preempted")
		assert.Equal(t, []string{"+60 Submitted: submitted by u1: normal priority, 1 replica(s) of cpu=16 memory=8Gi"}, l.events("n-1"))
		s := l.s.Jobs["s-1"]
		assert.Equal(t, "restart 1 of 3: replica 0 failed with exit code 1", s.Reason)
		assert.Equal(t, structs.StopGang, s.AttemptStop)
		l.report(now.Add(time.Second), structs.TaskFailed, 143, "s-1")
		s = l.s.Jobs["s-1"]
		assert.Equal(t, []any{structs.JobPending, "restart 1 of 3: replica 0 failed with exit code 1", 1, 1, 0},
			[]any{s.State, s.Reason, s.Attempt, s.Restarts(), s.Preemptions})
		assert.Empty(t, s.AttemptStop)
		for _, tk := range l.s.TasksOf("s-1") {
			if tk.Executor != "" {
				assert.Equal(t, []any{structs.TaskStopped, structs.StopGang}, []any{tk.State, tk.StopReason}, tk.ID)
			}
		}
	})
	t.Run("preempted first", func(t *testing.T) {
		l := sparkVictim(t)
		l.cycle(now)
		d := l.driverOf("s-1").ID
		l.end(now, d, structs.TaskFailed, 1, "")
		assert.Equal(t, []any{structs.TaskStopped, structs.StopPreempted}, []any{l.s.Tasks[d].State, l.s.Tasks[d].StopReason})
		l.report(now.Add(time.Second), structs.TaskFailed, 143, "s-1")
		s := l.s.Jobs["s-1"]
		assert.Equal(t, []any{structs.JobPending, structs.ReasonPreempted, 1, 0, 1},
			[]any{s.State, s.Reason, s.Attempt, s.Restarts(), s.Preemptions})
	})
}

// A warm-up that fails once its job is being preempted (its task placed,
// waiting for the copy, stopping): the job is requeued as preempted when
// its task has stopped, and warms its cache again when placed again,
// rather than failing (restartPolicy Never) for the attempt it lost.
func TestWarmUpFailsWhilePreempted(t *testing.T) {
	l := warmLogged(t)
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 * st.Gi}}})
	w := dataJob("w-1", st.NewJob("w", "u9").Low().CPU(60, 8))
	w.Cluster = "b"
	l.must(&state.JobSubmit{Job: w, Now: t0})
	l.cacheCycle(t0, bOnly)
	require.True(t, l.s.Warming(l.live("w-1")))
	n := job("n-1", st.NewJob("n", "u1").CPU(60, 8))
	n.Cluster = "b"
	l.must(&state.JobSubmit{Job: n, Now: t0})
	l.cacheCycle(t0, bOnly)
	require.Equal(t, structs.TaskStopping, l.live("w-1").State)

	l.must(&state.WarmUpEnd{Job: "w-1", Cluster: "b", Error: "redis: connection refused", Now: t0.Add(time.Second)})
	j := l.s.Jobs["w-1"]
	assert.Equal(t, []any{structs.JobScheduled, "preempted by n-1", structs.StopPreempted}, []any{j.State, j.Reason, j.AttemptStop})
	assert.Nil(t, j.WarmUps, "the attempt's warm-up is over")
	l.report(t0.Add(2*time.Second), structs.TaskFailed, 143, "w-1")
	j = l.s.Jobs["w-1"]
	assert.Equal(t, []any{structs.JobPending, structs.ReasonPreempted, 1, 1}, []any{j.State, j.Reason, j.Attempt, j.Preemptions})
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u9: low priority, 1 replica(s) of cpu=60 memory=8Gi",
		"+0 Placed w-1-0-w0: replica 0 placed on b1: cpu=60 memory=8Gi",
		"+0 Preempted: preempted by n-1: stopping its tasks on b1, freeing cpu=60 memory=8Gi",
		"+2 Stopped w-1-0-w0: replica 0 stopped (Preempted) with exit code 143",
		"+2 Requeued: pending again as attempt 2: Preempted",
	}, l.events("w-1"))
}

// A job cancelled while it is being preempted stays cancelled as its
// tasks end: neither requeued nor a preemption counted.
func TestCancelWhilePreempted(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 * st.Gi}}})
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u9").Low().MPI(2).CPU(30, 8)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "m-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").CPU(60, 8)), Now: t0})
	l.cycle(t0)
	l.must(&state.JobCancel{ID: "m-1", Now: t0.Add(time.Second), By: "u9"})
	l.report(t0.Add(2*time.Second), structs.TaskFailed, 143, "m-1")
	m := l.s.Jobs["m-1"]
	assert.Equal(t, []any{structs.JobCancelled, "cancelled", 0, 0}, []any{m.State, m.Reason, m.Attempt, m.Preemptions})
	assert.Empty(t, m.AttemptStop)
	for _, tk := range l.s.TasksOf("m-1") {
		assert.Equal(t, []any{structs.TaskStopped, structs.StopPreempted}, []any{tk.State, tk.StopReason}, "stopped for the preemption ordered first")
	}
}

// mpiOnFailure is low MPI job m-1 (restartPolicy OnFailure) running 2
// replicas on c1 and c2.
func mpiOnFailure(t *testing.T) (*logged, []*structs.Task) {
	l := newLogged(t, st.C64("c1"), st.C64("c2"))
	m := job("m-1", st.NewJob("m", "u9").Low().MPI(2).CPU(40, 8))
	m.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: m, Now: t0})
	l.cycle(t0)
	tasks := l.s.TasksOf("m-1")
	require.Len(t, tasks, 2)
	return l, tasks
}

// A gang restart and its coordinator's shutdown: whichever came first
// decides. Restarting first, the shutdown ends the stopping replica and
// the job is requeued using a restart; shut down first, the other
// replica's exit ends its stop and the requeue uses none.
func TestShutdownAndGangRestart(t *testing.T) {
	now := t0.Add(time.Minute)
	t.Run("restart first", func(t *testing.T) {
		l, tasks := mpiOnFailure(t)
		l.report(t0, structs.TaskRunning, 0, "m-1")
		l.end(now, tasks[1].ID, structs.TaskFailed, 1, "")
		l.end(now, tasks[0].ID, structs.TaskLost, 0, structs.ReasonShutdown)
		m := l.s.Jobs["m-1"]
		assert.Equal(t, []any{structs.JobPending, "restart 1 of 3: replica 1 failed with exit code 1", 1, 1, 0},
			[]any{m.State, m.Reason, m.Attempt, m.Restarts(), m.Interrupted})
		assert.Equal(t, []any{structs.TaskStopped, structs.StopGang}, []any{l.s.Tasks[tasks[0].ID].State, l.s.Tasks[tasks[0].ID].StopReason})
	})
	t.Run("shutdown first", func(t *testing.T) {
		l, tasks := mpiOnFailure(t)
		l.report(t0, structs.TaskRunning, 0, "m-1")
		l.end(now, tasks[0].ID, structs.TaskLost, 0, structs.ReasonShutdown)
		l.end(now, tasks[1].ID, structs.TaskFailed, 1, "")
		m := l.s.Jobs["m-1"]
		assert.Equal(t, []any{structs.JobPending, "requeued: stopped: coordinator shutting down", 1, 0, 1},
			[]any{m.State, m.Reason, m.Attempt, m.Restarts(), m.Interrupted})
		assert.Equal(t, []any{structs.TaskStopped, structs.StopShutdown}, []any{l.s.Tasks[tasks[1].ID].State, l.s.Tasks[tasks[1].ID].StopReason})
	})
}

// A replica that never started, lost while the gang restarts after its
// sibling's failure, ends the restart's stop: the job is requeued using
// a restart, not as lost before it started.
func TestLostWhileGangRestarts(t *testing.T) {
	l, tasks := mpiOnFailure(t)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tasks[1].ID, State: structs.TaskRunning, Time: t0}}})
	l.end(t0.Add(time.Minute), tasks[1].ID, structs.TaskFailed, 1, "")
	require.Equal(t, structs.TaskStopping, l.s.Tasks[tasks[0].ID].State)
	l.lost(tasks[0].ID)
	m := l.s.Jobs["m-1"]
	assert.Equal(t, []any{structs.JobPending, "restart 1 of 3: replica 1 failed with exit code 1", 1, 1, 0},
		[]any{m.State, m.Reason, m.Attempt, m.Restarts(), m.LostUnstarted})
	assert.Equal(t, []any{structs.TaskLost, structs.StopGang}, []any{l.s.Tasks[tasks[0].ID].State, l.s.Tasks[tasks[0].ID].StopReason})
}

// A state kept before jobs recorded their attempt's stop (a snapshot of
// an older server) has none: a batch job being preempted is requeued as
// preempted all the same, by its tasks' stop.
func TestPreemptedInAStateWithoutAttemptStop(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"cpu": 64000, "memory": 64 * st.Gi}}})
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u9").Low().MPI(2).CPU(30, 8)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "m-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").CPU(60, 8)), Now: t0})
	l.cycle(t0)
	require.Equal(t, structs.StopPreempted, l.s.Jobs["m-1"].AttemptStop)
	b, err := json.Marshal(l.s)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	delete(raw["jobs"].(map[string]any)["m-1"].(map[string]any), "attemptStop")
	b, err = json.Marshal(raw)
	require.NoError(t, err)
	old := state.New()
	require.NoError(t, json.Unmarshal(b, old))
	require.Empty(t, old.Jobs["m-1"].AttemptStop)

	l.s = old
	l.report(t0.Add(time.Second), structs.TaskFailed, 143, "m-1")
	m := l.s.Jobs["m-1"]
	assert.Equal(t, []any{structs.JobPending, structs.ReasonPreempted, 1, 1}, []any{m.State, m.Reason, m.Attempt, m.Preemptions})
}
