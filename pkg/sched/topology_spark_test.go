package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// zoned is 16-core CPU nodes n1 in zone z1, n2 and n3 in z2, with the
// level zone.
func zoned(t *testing.T) *st.Harness {
	h := sparkHarness(t,
		st.Label(st.CPUNode("n1", 16, 64), "zone", "z1"),
		st.Label(st.CPUNode("n2", 16, 64), "zone", "z2"),
		st.Label(st.CPUNode("n3", 16, 64), "zone", "z2"))
	h.Topology("zone")
	return h
}

// zonedSpark is zoned with spark job s (2 to 8 executors) of topology
// topo placed: its driver and minimum executors on n1, in z1.
func zonedSpark(t *testing.T, topo *structs.JobTopology) *st.Harness {
	h := zoned(t)
	j := spark("s", 2, 8)
	j.Topology = topo
	h.MustSubmit(j)
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("s"))
	return h
}

// A spark job that requires a zone gets its driver and minimum
// executors in one zone (the tightest, z1), and every executor Spark
// adds later stays there: when z1 is full the next one waits, though z2
// is empty.
func TestTopologySparkRequired(t *testing.T) {
	h := zonedSpark(t, &structs.JobTopology{Required: "zone"})
	assert.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s"))
	for _, pod := range []string{"e1", "e2", "e3"} {
		tp, err := h.BindExecutor("s", pod)
		require.NoError(t, err)
		assert.Equal(t, structs.NodeID("n1"), tp.Node)
	}
	_, err := h.BindExecutor("s", "e4")
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.ErrorContains(t, err, "no node in its driver's zone z1 of pool public has room for an executor of job s")
}

// One that prefers a zone takes its driver's zone while it has room,
// then any other.
func TestTopologySparkPreferred(t *testing.T) {
	h := zonedSpark(t, &structs.JobTopology{Preferred: "zone"})
	var nodes []structs.NodeID
	for _, pod := range []string{"e1", "e2", "e3", "e4"} {
		tp, err := h.BindExecutor("s", pod)
		require.NoError(t, err)
		nodes = append(nodes, tp.Node)
	}
	assert.Equal(t, []structs.NodeID{"n1", "n1", "n1", "n2"}, nodes)
}

// A spark job whose driver and minimum executors fit in no one zone
// waits, and says how close the zones come.
func TestTopologySparkWaits(t *testing.T) {
	h := zoned(t)
	h.MustSubmit(st.NewJob("b1", "u1").CPU(10, 8).Node("n1").Obj())
	h.MustSubmit(st.NewJob("b2", "u1").CPU(10, 8).Node("n2").Obj())
	h.MustSubmit(st.NewJob("b3", "u1").CPU(10, 8).Node("n3").Obj())
	h.Cycle()
	j := spark("s", 3, 8) // driver 2 cores + 3 × 4: 6 free per node
	j.Topology = &structs.JobTopology{Required: "zone"}
	h.MustSubmit(j)
	h.Cycle()
	assert.Empty(t, h.Tasks("s"))
	assert.Contains(t, h.Why("s").Message, "needs 3 executors in one zone: zone z2 has 2 free (of 8), z1 1")
}
