package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// A typo in cluster set's name makes a second cluster, after which node
// specs must name theirs: cluster set says so plainly, and cluster delete
// removes it. cluster delete refuses, naming them, while nodes are in the
// cluster or unended jobs are pinned to it, and changes nothing then.
func TestClusterDeleteUndoesATypo(t *testing.T) {
	e := apitest.NewEnv(t, "")
	assert.Equal(t, "cluster lcoal added: a new cluster, beside cluster local; node specs must now name their cluster. "+
		"If you meant to change an existing one, set it by its name; coordinator cluster delete lcoal removes this one\n",
		must(t, e, "admin", "cluster", "set", "-f", file(t, "name: lcoal\nbackend: local\n")))
	node := file(t, "{name: c2, cpu: 8, memory: 32Gi}")
	_, err := run(t, e, "admin", "node", "set", "-f", node)
	require.ErrorContains(t, err, "cluster is required: there are 2 clusters, name one of lcoal, local")

	assert.Equal(t, "cluster lcoal deleted\n", must(t, e, "admin", "cluster", "delete", "lcoal"))
	assert.Equal(t, "NAME   BACKEND  REDIS\nlocal  local    -\n", must(t, e, "u1", "cluster", "list"))
	must(t, e, "admin", "node", "set", "-f", node)

	_, err = run(t, e, "admin", "cluster", "delete", "local")
	require.EqualError(t, err, "cluster local still has 4 nodes c1, c2, g1, g2: delete them first (coordinator node delete NAME; a node running tasks: node set with state: draining, and delete it once they end)")
	_, err = run(t, e, "admin", "cluster", "delete", "lcoal")
	require.ErrorContains(t, err, "cluster lcoal not found")
	_, err = run(t, e, "u1", "cluster", "delete", "local")
	require.Error(t, err, "admins only")

	// A job pinned to a cluster keeps it while the job has not ended.
	must(t, e, "admin", "cluster", "set", "-f", file(t, "name: east\nbackend: local\n"))
	must(t, e, "admin", "node", "set", "-f", file(t, "{name: e1, cluster: east, cpu: 8, memory: 32Gi}"))
	assert.Equal(t, "job east-00001 submitted: Pending\n",
		must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: east, cluster: east, resources: {cpu: "1", memory: 1Gi}}`)))
	must(t, e, "admin", "node", "delete", "e1")
	_, err = run(t, e, "admin", "cluster", "delete", "east")
	require.EqualError(t, err, "cluster east: 1 job pinned to it has not ended: east-00001: cancel them (coordinator job cancel ID) or wait for them to end")
	must(t, e, "u1", "job", "cancel", "east-00001")
	assert.Equal(t, "cluster east deleted\n", must(t, e, "admin", "cluster", "delete", "east"))
}
