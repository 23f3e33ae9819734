package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// ClusterRemove deletes a cluster no node is in, through the log; a
// cluster with nodes is refused, naming a few, and kept. Its type is not
// ignorable: a server that kept the cluster would take nodes naming it.
func TestClusterRemove(t *testing.T) {
	assert.Zero(t, state.MsgClusterRemove&state.MsgIgnorable)
	l := newLogged(t)
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "east", Backend: "local"}})
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "west", Backend: "local"}})
	for _, name := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"} {
		n := st.C64(name)
		n.Cluster = "west"
		l.must(&state.NodeUpsert{Node: n})
	}
	_, err := l.do(&state.ClusterRemove{Name: "west"})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "cluster west still has 7 nodes w1, w2, w3, w4, w5 and 2 more: delete them first")
	assert.NotNil(t, l.s.Clusters["west"], "kept")

	l.must(&state.ClusterRemove{Name: "east"})
	assert.Nil(t, l.s.Clusters["east"])
	_, err = l.do(&state.ClusterRemove{Name: "east"})
	require.ErrorIs(t, err, state.ErrNotFound)
	_, err = l.do(&state.NodeUpsert{Node: &structs.Node{Name: "e1", Cluster: "east", Capacity: st.C64("e1").Capacity}})
	assert.ErrorContains(t, err, `cluster "east" does not exist`)
}
