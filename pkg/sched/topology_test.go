package sched_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// racked builds 8-GPU nodes of type A named r<rack>-<i> in racks of the
// given sizes (rack labels r1, r2, ...), two racks per block (b1, ...),
// and a harness with levels [block, rack] and a large quota for u1.
func racked(t *testing.T, sizes ...int) *st.Harness {
	var nodes []*structs.Node
	for r, size := range sizes {
		for i := range size {
			n := st.G8(fmt.Sprintf("r%d-%d", r+1, i+1), "A")
			nodes = append(nodes, st.Label(n, "rack", fmt.Sprintf("r%d", r+1), "block", fmt.Sprintf("b%d", r/2+1)))
		}
	}
	h := st.New(t, nodes...)
	h.Topology("block", "rack")
	h.Quota(u1, gpuA(1000))
	h.Quota(u2, gpuA(1000))
	return h
}

// racksOf lists the rack of each node of job id, in task order.
func racksOf(h *st.Harness, id string) map[string]int {
	out := map[string]int{}
	for _, n := range h.NodesOf(id) {
		out[h.Node(n).Tags["rack"]]++
	}
	return out
}

// A gang that requires a rack goes into one rack: the one it fills most
// tightly (r2, of 4 nodes, rather than r1 of 8), so r1 stays whole.
func TestTopologyRequiredBestFit(t *testing.T) {
	h := racked(t, 8, 4, 6)
	h.MustSubmit(st.NewJob("j", "u1").MPI(4).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r2": 4}, racksOf(h, "j"))
	// The next takes r3 (6 nodes) rather than r1 (8).
	h.MustSubmit(st.NewJob("k", "u1").MPI(5).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r3": 5}, racksOf(h, "k"))
	// Then r3's last node before r1.
	h.MustSubmit(st.NewJob("m", "u1").MPI(1).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r3": 1}, racksOf(h, "m"))
}

// A required gang with room in no one rack waits and holds nothing; the
// reason names the racks that come closest.
func TestTopologyRequiredWaitsAndSaysWhy(t *testing.T) {
	h := racked(t, 8, 8, 8)
	// Fill each rack partly: 3, 4 and 3 nodes left free.
	h.MustSubmit(st.NewJob("f1", "u2").MPI(5).GPU("A", 8).Required("rack").Obj())
	h.MustSubmit(st.NewJob("f2", "u2").MPI(4).GPU("A", 8).Required("rack").Obj())
	h.MustSubmit(st.NewJob("f3", "u2").MPI(5).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	require.Equal(t, map[string]int{"r1": 5}, racksOf(h, "f1"))
	require.Equal(t, map[string]int{"r2": 4}, racksOf(h, "f2"))
	require.Equal(t, map[string]int{"r3": 5}, racksOf(h, "f3"))
	h.MustSubmit(st.NewJob("j", "u1").MPI(6).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("j"))
	why := h.Why("j")
	require.NotNil(t, why)
	require.NotNil(t, why.Topology)
	assert.False(t, why.NeverFits)
	assert.Contains(t, why.Message, "needs 6 replicas in one rack: rack r2 has 4 free (of 8), r1 3, r3 3")
	// It is the oldest blocked gang: its reservation holds one rack, the
	// one with the most free now.
	held := map[string]int{}
	for _, r := range h.Snap.Reservations {
		require.Equal(t, structs.JobID("j"), r.Job)
		held[h.Node(string(r.Node)).Tags["rack"]]++
	}
	assert.Equal(t, map[string]int{"r2": 6}, held)
	// When f2 ends, j takes r2.
	h.Finish("f2", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, map[string]int{"r2": 6}, racksOf(h, "j"))
}

// A gang larger than every rack can never fit: refused at submit, with
// the largest rack named; a rack level the cluster lacks is refused
// naming the levels it has.
func TestTopologyAdmission(t *testing.T) {
	h := racked(t, 8, 4)
	err := h.Submit(st.NewJob("big", "u1").MPI(9).GPU("A", 8).Required("rack").Obj())
	var un *sched.UnsatisfiableError
	require.ErrorAs(t, err, &un)
	assert.Contains(t, err.Error(), "can never fit")
	assert.Contains(t, err.Error(), "needs 9 replicas in one rack")
	assert.Contains(t, err.Error(), "the largest holds 8")
	// Preferred: fits across racks, so accepted.
	require.NoError(t, h.Submit(st.NewJob("pref", "u1").MPI(9).GPU("A", 8).Preferred("rack").Obj()))

	err = h.Submit(st.NewJob("z", "u1").MPI(2).GPU("A", 8).Required("zone").Obj())
	require.Error(t, err)
	assert.True(t, errors.Is(err, sched.ErrUnsatisfiable))
	assert.Equal(t, `topology.required: unknown topology level "zone": cluster "" has levels block, rack (an admin sets them under topology.levels in the cluster spec)`, err.Error())
}

// Nodes without the level's label are in no domain: a required gang
// never goes there, and the reason counts them (here at submit: no rack
// could ever hold it).
func TestTopologyUnlabelledNodes(t *testing.T) {
	h := racked(t, 2)
	h.Snap.Nodes = append(h.Snap.Nodes, st.G8("loose-1", "A"), st.G8("loose-2", "A"), st.G8("loose-3", "A"))
	err := h.Submit(st.NewJob("j", "u1").MPI(3).GPU("A", 8).Required("rack").Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.Contains(t, err.Error(), "3 in no rack (without its label)")
	h.MustSubmit(st.NewJob("k", "u1").MPI(2).GPU("A", 8).Required("rack").Obj())
	h.Cycle()
	assert.Equal(t, map[string]int{"r1": 2}, racksOf(h, "k"))
}
