package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// A cluster spec replaces the whole cluster: cluster get -o yaml writes
// the spec of the cluster as it is, which cluster set takes back with
// one field added, and cluster set says what it changed, a topology level
// a spec leaves out above all.
func TestClusterSetSaysWhatChanged(t *testing.T) {
	e := apitest.NewEnv(t, racks)
	spec := must(t, e, "u1", "cluster", "get", "-o", "yaml", "local")
	assert.Equal(t, "backend: local\nname: local\ntopology:\n  levels:\n  - topology.kubernetes.io/zone\n  - rack\n", spec)
	assert.Equal(t, "cluster local set: nothing changed\n", must(t, e, "admin", "cluster", "set", "-f", file(t, spec)))
	assert.Equal(t, "cluster local set: redis added\n", must(t, e, "admin", "cluster", "set", "-f", file(t, spec+"redis: 10.0.0.5:6379\n")))
	assert.Equal(t, ""+
		"NAME   BACKEND  REDIS          TOPOLOGY\n"+
		"local  local    10.0.0.5:6379  topology.kubernetes.io/zone,rack\n",
		must(t, e, "u1", "cluster", "get", "local"))

	// A spec of just name, backend and redis drops the levels: said.
	assert.Equal(t, "cluster local set: topology levels topology.kubernetes.io/zone, rack removed; redis changed from 10.0.0.5:6379 to 10.0.0.6:6379\n",
		must(t, e, "admin", "cluster", "set", "-f", file(t, "name: local\nbackend: local\nredis: 10.0.0.6:6379\n")))
	assert.Contains(t, must(t, e, "admin", "cluster", "set", "-f", file(t, "name: remote\nbackend: kubernetes\n")), "cluster remote added: a new cluster, beside cluster local;")

	// With -o yaml the note goes beside the output, which stays a spec.
	out := must(t, e, "admin", "cluster", "set", "-o", "yaml", "-f", file(t, "name: remote\nbackend: kubernetes\nqps: 5\n"))
	assert.Contains(t, out, "cluster remote set: qps added\n")
	assert.Contains(t, out, "qps: 5\n")

	_, err := run(t, e, "u1", "cluster", "get", "nowhere")
	require.ErrorContains(t, err, "cluster nowhere not found")
}

// A cluster whose name YAML 1.1 reads as a boolean (no, on, y) is found
// by its name as any other: cluster set read the name with YAML 1.1, found
// none and called each set of it a new cluster.
func TestClusterSetFindsTheNameAsWritten(t *testing.T) {
	e := apitest.NewEnv(t, racks)
	spec := file(t, "name: no\nbackend: kubernetes\n")
	assert.Contains(t, must(t, e, "admin", "cluster", "set", "-f", spec), "cluster no added: a new cluster, beside cluster local;")
	assert.Equal(t, "cluster no set: nothing changed\n", must(t, e, "admin", "cluster", "set", "-f", spec))
}
