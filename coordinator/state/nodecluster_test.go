package state_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestNodeNamesUniqueAcrossClusters: two kubernetes clusters each with a
// Node gpu-1 no longer overwrite each other's node (the second cluster's
// NodeUpsert replaced the first's, and its NodeRemove removed it): the
// second is refused, saying why, and a remove names its cluster. A spec
// naming no cluster keeps the node's (node set with state: draining).
func TestNodeNamesUniqueAcrossClusters(t *testing.T) {
	l := newLogged(t)
	for _, c := range []structs.ClusterID{"a", "b"} {
		l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: c, Backend: "kubernetes"}})
	}
	inA := st.G8("gpu-1", "A100")
	inA.Cluster = "a"
	l.must(&state.NodeUpsert{Node: inA})
	inB := st.G8("gpu-1", "H100")
	inB.Cluster = "b"
	_, err := l.do(&state.NodeUpsert{Node: inB})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.EqualError(t, err, "node gpu-1: a node of that name is in cluster a, not b: node names must be unique across clusters (remove it from a first to move it; a kubernetes Node's name is its node's)")
	assert.Equal(t, structs.ClusterID("a"), l.s.Nodes["gpu-1"].Cluster)
	assert.Equal(t, "A100", l.s.Nodes["gpu-1"].Capacity.AccelType, "unchanged")

	_, err = l.do(&state.NodeRemove{Name: "gpu-1", Cluster: "b"})
	assert.True(t, errors.Is(err, state.ErrNotFound), "b's remove of its gpu-1 is not a's: %v", err)
	require.NotNil(t, l.s.Nodes["gpu-1"])

	draining := *inA
	draining.Cluster = ""
	draining.State = structs.NodeDraining
	l.must(&state.NodeUpsert{Node: &draining})
	assert.Equal(t, structs.ClusterID("a"), l.s.Nodes["gpu-1"].Cluster, "a spec naming no cluster keeps the node's")
	assert.Equal(t, structs.NodeDraining, l.s.Nodes["gpu-1"].State)

	l.must(&state.NodeRemove{Name: "gpu-1", Cluster: "a"})
	l.must(&state.NodeUpsert{Node: inB})
	assert.Equal(t, structs.ClusterID("b"), l.s.Nodes["gpu-1"].Cluster, "once removed from a, b may have it")
}
