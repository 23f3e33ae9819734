package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

func nodeCluster(e *apitest.Env, name structs.NodeID) (c structs.ClusterID, ok bool) {
	e.Store.Read(func(st *state.State) {
		if n := st.Nodes[name]; n != nil {
			c, ok = n.Cluster, true
		}
	})
	return c, ok
}

// node set without cluster: puts a new node into the only cluster (a node
// in none is one no gang spans with the others); with several clusters
// the spec must name one, and the error names them; a node already in a
// cluster stays there.
func TestNodeSetDefaultsToTheOnlyCluster(t *testing.T) {
	e := apitest.NewEnv(t, "")
	admin := e.Tokens["admin"]
	code, body := do(t, e, admin, "PUT", "/v1/nodes/c9", `{name: c9, cpu: 32, memory: 128Gi}`)
	require.Equal(t, http.StatusOK, code, body)
	c, _ := nodeCluster(e, "c9")
	assert.Equal(t, structs.ClusterID("local"), c)

	two := apitest.NewEnv(t, "clusters: [{name: east}, {name: west}]\nnodes:\n- {name: w1, cluster: west, cpu: 8, memory: 32Gi}\n")
	admin = two.Tokens["admin"]
	code, body = do(t, two, admin, "PUT", "/v1/nodes/c9", `{name: c9, cpu: 32, memory: 128Gi}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.JSONEq(t, `{"error": "node spec: cluster is required: there are 2 clusters, name one of east, west"}`, body)
	_, ok := nodeCluster(two, "c9")
	assert.False(t, ok, "nothing was made")

	code, body = do(t, two, admin, "PUT", "/v1/nodes/w1", `{name: w1, cpu: 16, memory: 64Gi}`)
	require.Equal(t, http.StatusOK, code, body)
	c, _ = nodeCluster(two, "w1")
	assert.Equal(t, structs.ClusterID("west"), c, "a node in a cluster stays there")
}
