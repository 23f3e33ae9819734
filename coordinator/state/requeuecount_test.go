package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// A requeue that is not the job's fault (here its coordinator's
// shutdown) is counted once it happens, not when its stop is ordered: a
// job cancelled while its tasks stop was never requeued, and its restart
// budget reads 0 used, not -1.
func TestRequeueCountedWhenItHappens(t *testing.T) {
	now := t0.Add(time.Minute)
	budget := func(m *structs.Job) []any {
		return []any{m.State, m.Attempt, m.Restarts(), m.Interrupted, m.RequeueCause, m.RestartSummary()}
	}
	t.Run("requeued", func(t *testing.T) {
		l, tasks := mpiOnFailure(t)
		l.report(t0, structs.TaskRunning, 0, "m-1")
		l.end(now, tasks[0].ID, structs.TaskLost, 0, structs.ReasonShutdown)
		assert.Equal(t, []any{structs.JobRunning, 0, 0, 0, structs.CauseInterrupted, "0 of 3 used"}, budget(l.s.Jobs["m-1"]), "stopping")
		l.end(now, tasks[1].ID, structs.TaskFailed, 143, "")
		assert.Equal(t, []any{structs.JobPending, 1, 0, 1, structs.RequeueCause(""),
			"0 of 3 used; requeues that used none (not the job's fault): 1 coordinator shutdown or outage"}, budget(l.s.Jobs["m-1"]))
	})
	t.Run("cancelled first", func(t *testing.T) {
		l, tasks := mpiOnFailure(t)
		l.report(t0, structs.TaskRunning, 0, "m-1")
		l.end(now, tasks[0].ID, structs.TaskLost, 0, structs.ReasonShutdown)
		l.must(&state.JobCancel{ID: "m-1", Now: now, By: "u9"})
		l.end(now.Add(time.Second), tasks[1].ID, structs.TaskFailed, 143, "")
		assert.Equal(t, []any{structs.JobCancelled, 0, 0, 0, structs.RequeueCause(""), "0 of 3 used"}, budget(l.s.Jobs["m-1"]),
			"it used to read -1 of 3 used, 1 coordinator shutdown")
	})
	t.Run("restart first", func(t *testing.T) {
		// The restart ordered first decides: the shutdown that ends the
		// stopping replica adds to no counter.
		l, tasks := mpiOnFailure(t)
		l.report(t0, structs.TaskRunning, 0, "m-1")
		l.end(now, tasks[1].ID, structs.TaskFailed, 1, "")
		l.end(now, tasks[0].ID, structs.TaskLost, 0, structs.ReasonShutdown)
		assert.Equal(t, []any{structs.JobPending, 1, 1, 0, structs.RequeueCause(""), "1 of 3 used"}, budget(l.s.Jobs["m-1"]))
	})
}
