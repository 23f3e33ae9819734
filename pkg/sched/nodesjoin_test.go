package sched_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A gang that asks its replicas on distinct nodes, on a cluster with
// fewer nodes than replicas, could never start together: it is refused at
// submit, as a gang too big for any one pool is. A service's replicas,
// which start one by one, wait for nodes to join instead, and the one
// that had no node starts when one joins.
func TestSpreadGangNeedsAsManyNodes(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(64))
	err := h.Submit(st.NewJob("g", "u1").MPI(2).GPU("A", 1).Spread().Obj())
	require.Error(t, err)
	assert.Equal(t, "can never fit; gang needs 2 replicas: 1 fit now, at most 1 on empty nodes; 2 replicas need 2 distinct nodes, 1 eligible", err.Error())

	require.NoError(t, h.Submit(st.NewJob("s", "u1").Service(2, 1).GPU("A", 1).Spread().Obj()))
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("s"))
	h.Snap.Nodes = append(h.Snap.Nodes, st.G8("n2", "A"))
	h.Cycle()
	assert.Equal(t, []string{"n1", "n2"}, h.NodesOf("s"))
}

// What no node could ever hold is still refused at submit, spread or not.
func TestSpreadGangNoNodeHoldsAReplica(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(64))
	err := h.Submit(st.NewJob("g", "u1").MPI(2).GPU("A", 9).Spread().Obj())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "can never fit")
}

// A spark job whose executors fit only on a node that is not ready
// waits: the node comes back.
func TestSparkGangBlockedByNodeNotReadyWaits(t *testing.T) {
	c1, c2 := st.CPUNode("c1", 2, 8), st.CPUNode("c2", 8, 64)
	c2.State = structs.NodeNotReady
	h := sparkHarness(t, c1, c2)
	h.MustSubmit(spark("sp", 1, 1))
	h.Cycle()
	why := h.Why("sp")
	require.NotNil(t, why)
	assert.False(t, why.NeverFits)
	assert.Equal(t, "does not fit now; driver + 1 executor need cpu=2 memory=4Gi + 1 × cpu=4 memory=9Gi at once, in one pool of one cluster: "+
		"0 executors fit now, at most 1 on empty nodes; for executors 0/2 nodes fit: 1 not ready, 1 too small for one executor (cpu=4 memory=9Gi); "+
		"for the driver 1/2 nodes fit: 1 not ready", why.Message)

	c2.State = structs.NodeReady
	h.Cycle()
	assert.Equal(t, []string{"c1"}, h.NodesOf("sp"), "the driver")
	assert.Equal(t, []string{"c2"}, heldNodes(h, "sp"), "its executor's room")
}

// When enough accelerators are free in all but not on one node, why
// lists the free ones per node, most first, a few nodes at most.
func TestWhyFragmentationPerNode(t *testing.T) {
	// fragmented has 4-GPU nodes n1, n2, ... with busy[i] of node i+1's
	// accelerators taken, and a pending job asking 4 on one node.
	fragmented := func(busy ...int64) *st.Harness {
		var nodes []*structs.Node
		for i := range busy {
			nodes = append(nodes, st.GPUNode(fmt.Sprintf("n%d", i+1), "A100", 4))
		}
		h := st.New(t, nodes...)
		h.Quota(u1, structs.ResourceList{"gpu/A100": 64})
		for i, c := range busy {
			h.MustSubmit(st.NewJob(fmt.Sprintf("fill-%d", i+1), "u1").GPU("A100", c).Node(fmt.Sprintf("n%d", i+1)).Obj())
		}
		h.Cycle()
		h.MustSubmit(st.NewJob("four", "u1").GPU("A100", 4).Obj())
		h.Cycle()
		return h
	}
	h := fragmented(3, 2, 3, 4)
	assert.Equal(t, "does not fit now; n2: 2 free A100, n1: 1, n3: 1; 4 needed on one node; 0/4 nodes fit: 4 without enough free resources now", h.Why("four").Message)

	// More nodes with some free than are named: the rest are summed up.
	h = fragmented(3, 2, 3, 3, 3, 3, 3)
	assert.Contains(t, h.Why("four").Message, "; n2: 2 free A100, n1: 1, n3: 1, n4: 1, n5: 1, and 2 more nodes with 2 free; 4 needed on one node; ")
}

// A job naming a declared cluster no node is in yet is accepted, waits
// saying so (not "can never fit"), and runs once a node joins it.
func TestJobWaitsForItsClusterToGetNodes(t *testing.T) {
	c1 := st.CPUNode("c1", 8, 32)
	c1.Cluster = "main"
	h := st.New(t, c1)
	h.Snap.Clusters = map[structs.ClusterID]bool{"main": true, "edge": true}
	h.Quota(u1, structs.ResourceList{structs.KeyCPU: 8000, structs.KeyMemory: 32 * st.Gi})
	j := st.NewJob("e", "u1").CPU(1, 1).Obj()
	j.Cluster = "edge"
	require.NoError(t, h.Submit(j))
	h.Cycle()
	assert.Empty(t, h.Tasks("e"))
	why := h.Why("e")
	require.NotNil(t, why)
	assert.False(t, why.NeverFits)
	assert.Equal(t, "does not fit now; cluster edge has no nodes yet: the job waits for nodes to join it (coordinator node list shows each node's cluster)", why.Message)

	n := st.CPUNode("e1", 4, 16)
	n.Cluster = "edge"
	h.Snap.Nodes = append(h.Snap.Nodes, n)
	h.Cycle()
	assert.Equal(t, []string{"e1"}, h.NodesOf("e"))

	k := st.NewJob("k", "u1").CPU(1, 1).Obj()
	k.Cluster = "nowhere"
	assert.EqualError(t, h.Submit(k), `cluster "nowhere" does not exist: known clusters are edge, main`)
}
