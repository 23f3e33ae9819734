package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A gang's replicas may end before all of them ran (a fast replica
// succeeds; one is lost and the gang is torn down: the others stop, then
// it is requeued). The replicas that ended count as placed, so such a
// gang is not taken for a partial placement; one that stops some replicas
// and keeps others is still a violation (found by make chaos).
func TestInvariantGangTearDown(t *testing.T) {
	gang := st.NewJob("m", "u1").MPI(2).CPU(1, 1).Obj()
	gang.ID, gang.State = "m-1", structs.JobScheduled
	task := func(i int, s structs.TaskState) *structs.Task {
		return &structs.Task{ID: structs.NewTaskID(gang.ID, i, "0000"), Job: gang.ID, Index: i, Node: "c1", State: s,
			Resources: structs.Resources{MilliCPU: 1000, Memory: 1 << 30}}
	}
	snap := func(ts ...*structs.Task) *sched.Snapshot {
		return &sched.Snapshot{Nodes: []*structs.Node{st.C64("c1")}, Jobs: map[structs.JobID]*structs.Job{gang.ID: gang}, Tasks: ts}
	}
	require.NoError(t, sched.CheckInvariants(snap(task(0, structs.TaskScheduled), task(1, structs.TaskRunning))))
	lost := snap(task(0, structs.TaskStopping))
	lost.Ended = map[structs.JobID]int{gang.ID: 1}
	require.NoError(t, sched.CheckInvariants(lost), "replica 1 was lost; replica 0 stops")
	err := sched.CheckInvariants(snap(task(0, structs.TaskRunning)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gang m-1 (Scheduled) has 1 of 2 replicas placed")
	err = sched.CheckInvariants(snap(task(0, structs.TaskStopping), task(1, structs.TaskRunning)))
	require.Error(t, err, "a tear-down stops every replica")
	assert.Contains(t, err.Error(), "gang m-1 (Scheduled) stops 1 of its replicas and keeps 1")

	// Replica 1 succeeded before replica 0 reported Running: the gang
	// was placed whole all the same.
	done := snap(task(0, structs.TaskScheduled))
	done.Ended = map[structs.JobID]int{gang.ID: 1}
	require.NoError(t, sched.CheckInvariants(done))
}
