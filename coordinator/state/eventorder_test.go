package state_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A job's event never sorts before the event that caused it: a gang's
// replicas stopped by their atoms in an outage report their stops with
// their own clocks, the one reported last earlier than the first; the
// job's Requeued, recorded once the last is in, comes after both Lost
// events in time order (as job events and the dashboard show them), not
// between them.
func TestJobEventsFollowTheirCause(t *testing.T) {
	l := newLogged(t, st.C64("c1"), st.C64("c2"))
	l.must(&state.JobSubmit{Job: job("g-1", st.NewJob("g", "u1").Low().MPI(2).CPU(1, 1)), Now: t0})
	l.recycle(t0)
	tasks := l.s.TasksOf("g-1")
	require.Len(t, tasks, 2)
	l.report(t0, structs.TaskRunning, 0, "g-1")
	for _, tk := range l.s.TasksOf("g-1") {
		if tk.State == structs.TaskScheduled {
			l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskRunning, Time: t0}}})
		}
	}
	first, second := tasks[0].ID, tasks[1].ID
	for _, e := range []struct {
		id structs.TaskID
		at time.Duration
	}{{first, 60 * time.Second}, {second, 58 * time.Second}} {
		l.must(&state.TaskUpdate{Events: []structs.TaskEvent{
			{Task: e.id, State: structs.TaskFailed, ExitCode: 143, Message: outage, Reason: structs.ReasonDisconnected, Time: t0.Add(e.at)},
		}})
	}
	require.Equal(t, structs.JobPending, l.s.Jobs["g-1"].State)

	evs := slices.Clone(l.s.Events["g-1"].Events)
	slices.SortFunc(evs, structs.CompareEvents)
	var order []string
	for _, e := range evs {
		order = append(order, fmt.Sprintf("%s %s", e.Type, e.Task))
	}
	requeued := slices.Index(order, "Requeued ")
	require.GreaterOrEqual(t, requeued, 0, order)
	assert.Greater(t, requeued, slices.Index(order, "Lost "+string(first)), order)
	assert.Greater(t, requeued, slices.Index(order, "Lost "+string(second)), order)
}
