package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// job status says where a cache job's tasks see the cache: on a local
// cluster each task mounts its own in its directory, not at the spec's
// mountPath; on a kubernetes cluster at the mountPath.
func TestJobStatusSaysWhereTheCacheIs(t *testing.T) {
	e := apitest.NewEnv(t, `
clusters: [{name: local, redis: "127.0.0.1:6379"}]
nodes:
- {name: c1, cluster: local, cpu: 64, memory: 256Gi}
quotas:
- {scope: "user:u1", limits: {cpu: 32, memory: 128Gi}}
`)
	spec := file(t, "{kind: command, name: c, command: [run], cache: {datasets: [lidar/x]}, resources: {cpu: 1, memory: 1Gi}}")
	must(t, e, "u1", "job", "submit", "-f", spec)
	out := must(t, e, "u1", "job", "status", "c-00001")
	assert.Contains(t, out, "\nDatasets:   lidar/x at each task's own directory (cache/ there; the job reads $ATOM_CACHE_DIR)\n")
	assert.NotContains(t, out, "/mnt/cache")
}
