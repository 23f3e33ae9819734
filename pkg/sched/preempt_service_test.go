package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// svcOnTwoNodes: a low service of 8 one-GPU replicas on two 4-GPU nodes,
// those on n1 placed an hour before those on n2 (it was scaled up).
func svcOnTwoNodes(t *testing.T) *st.Harness {
	h := st.New(t, st.GPUNode("n1", "A", 4), st.GPUNode("n2", "A", 4))
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("svc", "lu").Low().Service(4, 1).GPU("A", 1).Obj())
	h.Cycle()
	require.Equal(t, []string{"n1", "n1", "n1", "n1"}, h.NodesOf("svc"))
	h.Advance(time.Hour)
	require.NoError(t, h.Scale("svc", 8))
	h.Cycle()
	require.Equal(t, []string{"n1", "n1", "n1", "n1", "n2", "n2", "n2", "n2"}, h.NodesOf("svc"))
	h.Advance(time.Minute)
	return h
}

// A normal job needing 4 GPUs on one node stops the 4 newest replicas
// of the low service, all on one node; the other 4 keep running, and the
// 4 replacements wait (first for their tasks to stop, then for room the
// preemptor does not take) instead of taking the room freed for it.
func TestServiceLosesOnlyTheReplicasNeeded(t *testing.T) {
	h := svcOnTwoNodes(t)
	before := h.Tasks("svc")
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 4).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 1)
	pre := p.Preemptions[0]
	assert.Equal(t, structs.JobID("svc"), pre.Victim)
	assert.True(t, pre.Replicas, "only some replicas")
	assert.ElementsMatch(t, []structs.TaskID{before[4].ID, before[5].ID, before[6].ID, before[7].ID}, pre.Tasks, "the 4 newest, on n2")
	assert.Equal(t, "waiting for 1 preempted low-priority job(s) to stop: svc", h.Why("n").Waiting)
	for _, tk := range h.Tasks("svc")[:4] {
		assert.Equal(t, structs.TaskRunning, tk.State, "replica %d on n1 runs on", tk.Index)
	}
	assert.Equal(t, structs.JobRunning, h.Job("svc").State)

	p = h.Cycle() // still stopping: nobody else is preempted, nothing placed
	assert.Empty(t, p.Preemptions)
	assert.Empty(t, p.Placements)
	assert.Equal(t, "waiting for 4 preempted replicas to stop before placing them again", h.Why("svc").Message)

	h.Settle()
	p = h.Cycle()
	require.Len(t, p.Placements, 1, "the preemptor, not the replacements")
	assert.Equal(t, []string{"n2"}, h.NodesOf("n"))
	assert.Equal(t, []string{"n1", "n1", "n1", "n1"}, h.NodesOf("svc"))
	for i, tk := range h.Tasks("svc") {
		assert.Equal(t, before[i].ID, tk.ID, "replica %d is the same task", i)
	}
	assert.Equal(t, "does not fit now; 0/2 nodes fit: 2 without enough free resources now", h.Why("svc").Message)
	assert.Equal(t, 0, h.Job("svc").Attempt, "not requeued")

	h.Finish("n", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"n1", "n1", "n1", "n1", "n2", "n2", "n2", "n2"}, h.NodesOf("svc"), "placed again once room frees")
}

// Before the preemptor is placed, the replacements cannot take the room
// freed for it even when they are tried first (its reservation binds
// them), and replicas a preemptor does not need stay.
func TestServiceReplacementsDoNotTakeTheFreedRoom(t *testing.T) {
	h := svcOnTwoNodes(t)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 1).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 1)
	require.Len(t, p.Preemptions[0].Tasks, 1, "one GPU: one replica")
	assert.Equal(t, structs.MakeTaskID("svc", 7, 0), p.Preemptions[0].Tasks[0], "the newest: replica 7")
	h.Settle()
	// The preemptor is pinned somewhere it cannot go this cycle: only its
	// reservation stands between the service and the room.
	n := h.Job("n")
	n.Selector = "x=y"
	p = h.Cycle()
	assert.Empty(t, p.Placements)
	assert.Len(t, h.Tasks("svc"), 7)
	assert.Equal(t, "does not fit now; 0/2 nodes fit: 1 reserved for job n, 1 without enough free resources now; nodes are reserved for n", h.Why("svc").Message)
}

// A gang victim still goes whole, and a service goes whole when the
// cycle asks for whole services (earlier releases' victim choice).
func TestServiceWholeWhenAsked(t *testing.T) {
	h := svcOnTwoNodes(t)
	h.WholeServices = true
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 4).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 1)
	assert.False(t, p.Preemptions[0].Replicas)
	assert.Len(t, p.Preemptions[0].Tasks, 8)
	h.Settle()
	assert.Equal(t, structs.JobPending, h.Job("svc").State)
	assert.Equal(t, 1, h.Job("svc").Attempt, "requeued whole")
	h.Cycle()
	assert.Len(t, h.Tasks("svc"), 4, "placed again, all it can")
}

// A service that would lose every live replica is preempted whole.
func TestServiceLosingAllIsPreemptedWhole(t *testing.T) {
	h := st.New(t, st.GPUNode("n1", "A", 4))
	h.Quota(u1, gpuA(4))
	h.MustSubmit(st.NewJob("svc", "lu").Low().Service(2, 1).GPU("A", 2).Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 4).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 1)
	pre := p.Preemptions[0]
	assert.Equal(t, sched.Preemption{Victim: "svc", Preemptor: "n", Tasks: pre.Tasks}, pre)
	assert.ElementsMatch(t, []structs.TaskID{"svc-0-a0", "svc-1-a0"}, pre.Tasks)
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("n"))
	assert.Equal(t, structs.JobPending, h.Job("svc").State)
}
