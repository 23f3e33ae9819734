package state_test

import (
	"testing"

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
