package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A gang that prefers a rack takes one rack when one has room, else one
// block, else any nodes.
func TestTopologyPreferredWidens(t *testing.T) {
	h := racked(t, 4, 4, 4) // r1, r2 in b1; r3 in b2
	h.MustSubmit(st.NewJob("a", "u1").MPI(3).GPU("A", 8).Preferred("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 3}, racksOf(h, "a"))
	// 5 fit in no rack: block b1 has r1's last node and r2.
	h.MustSubmit(st.NewJob("b", "u1").MPI(5).GPU("A", 8).Preferred("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 1, "r2": 4}, racksOf(h, "b"))
	// 4 left, all in r3 of b2: a rack again.
	h.MustSubmit(st.NewJob("c", "u1").MPI(2).GPU("A", 8).Preferred("block").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r3": 2}, racksOf(h, "c"))
	// Nothing asks: anywhere.
	h.Finish("a", structs.JobSucceeded) // r1: 3 free; r3: 2
	h.MustSubmit(st.NewJob("d", "u1").MPI(5).GPU("A", 8).Preferred("block").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 3, "r3": 2}, racksOf(h, "d"))
}

// lowOn runs a low 8-GPU job of u2 on node n (by pinning it there).
func lowOn(h *st.Harness, id, n string) {
	h.T.Helper()
	h.MustSubmit(st.NewJob(id, "u2").Low().GPU("A", 8).Node(n).Obj())
	h.Cycle()
	require.Equal(h.T, []string{n}, h.NodesOf(id))
}

// Preemption for a gang that requires a rack evicts victims in one rack
// that then holds it, even where evicting elsewhere would free enough
// nodes in all: here the most recent low job runs in the other rack.
func TestTopologyPreemptionWithinOneRack(t *testing.T) {
	h := racked(t, 2, 2)
	h.MustSubmit(st.NewJob("busy", "u1").GPU("A", 8).Node("r2-1").Obj())
	lowOn(h, "l1", "r1-1")
	h.Advance(1)
	lowOn(h, "l2", "r2-2")
	h.MustSubmit(st.NewJob("j", "u1").MPI(2).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, []string{"l1"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 2}, racksOf(h, "j"))
	assert.Equal(t, structs.TaskRunning, h.Tasks("l2")[0].State)
}

// A required gang that no rack can hold even with every low job gone
// preempts nothing, though evicting across racks would free enough.
func TestTopologyPreemptionNeedsOneRack(t *testing.T) {
	h := racked(t, 2, 2)
	h.MustSubmit(st.NewJob("b1", "u1").GPU("A", 8).Node("r1-2").Obj())
	h.MustSubmit(st.NewJob("b2", "u1").GPU("A", 8).Node("r2-2").Obj())
	lowOn(h, "l1", "r1-1")
	lowOn(h, "l2", "r2-1")
	h.MustSubmit(st.NewJob("j", "u1").MPI(2).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Empty(t, h.Victims())
	assert.Contains(t, h.Why("j").Message, "needs 2 replicas in one rack: rack r1 has 0 free (of 2), r2 0")
}

// Of two racks where victims make room, the cheaper set: one low gang
// in r1 rather than two more recent low jobs in r2.
func TestTopologyPreemptionCheapestRack(t *testing.T) {
	h := racked(t, 2, 2)
	h.MustSubmit(st.NewJob("lg", "u2").Low().MPI(2).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	require.Equal(t, map[string]int{"r1": 2}, racksOf(h, "lg"))
	h.Advance(1)
	lowOn(h, "l3", "r2-1")
	lowOn(h, "l4", "r2-2")
	h.MustSubmit(st.NewJob("j", "u1").MPI(2).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, []string{"lg"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 2}, racksOf(h, "j"))
}
