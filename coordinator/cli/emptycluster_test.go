package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A job naming a cluster that cluster list shows but that no node is in
// yet is accepted and waits, saying the cluster has no nodes yet, not
// that it does not exist; a cluster nobody declared is still refused,
// listing the declared ones.
func TestJobOnAClusterWithoutNodesWaits(t *testing.T) {
	e := apitest.NewEnv(t, `
clusters: [{name: local}, {name: locl}]
nodes:
- {name: c1, cluster: local, cpu: 64, memory: 256Gi}
quotas:
- {scope: "user:u1", limits: {cpu: 32, memory: 128Gi}}
`)
	assert.Contains(t, must(t, e, "admin", "cluster", "list"), "locl")
	spec := file(t, "{kind: command, name: far, cluster: locl, command: [run], resources: {cpu: 1, memory: 1Gi}}")
	out := must(t, e, "u1", "job", "submit", "-f", spec)
	assert.Contains(t, out, "far-00001")
	e.Store.Schedule(t, apitest.T0)
	require.Equal(t, structs.JobPending, e.Store.Job("far-00001").State)
	why := must(t, e, "u1", "job", "why", "far-00001")
	assert.Contains(t, why, "does not fit now")
	assert.Contains(t, why, "cluster locl has no nodes yet: the job waits for nodes to join it")
	assert.NotContains(t, why, "never")

	spec = file(t, "{kind: command, name: nowhere, cluster: lcal, command: [run], resources: {cpu: 1, memory: 1Gi}}")
	out, err := run(t, e, "u1", "job", "submit", "-f", spec)
	require.Error(t, err)
	assert.Contains(t, out+err.Error(), `cluster "lcal" does not exist: known clusters are local, locl; did you mean local?`)
}
