package taskenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
)

func TestCacheEnv(t *testing.T) {
	j := &structs.Job{CacheMountPath: "/mnt/cache", Datasets: []string{"lidar/x"}}
	assert.Equal(t, map[string]string{"ATOM_CACHE_REDIS": "10.0.0.5:6379", "REDIS_HOST": "10.0.0.5", "REDIS_PORT": "6379"},
		CacheEnv(j, "10.0.0.5:6379"))
	j.Env = map[string]string{"REDIS_HOST": "mine"}
	assert.Equal(t, map[string]string{"ATOM_CACHE_REDIS": "10.0.0.5:6379", "REDIS_PORT": "6379"},
		CacheEnv(j, "10.0.0.5:6379"), "the job's own REDIS_HOST stays")
	assert.Nil(t, CacheEnv(j, ""), "a cluster without a cache")
	assert.Equal(t, map[string]string{"REDIS_HOST": "10.0.0.5", "REDIS_PORT": "6379"}, CacheEnv(&structs.Job{}, "10.0.0.5:6379"),
		"a job without cache: reaches the cluster's Redis with its own client (no mount)")
	assert.Nil(t, CacheEnv(&structs.Job{}, ""), "a cluster without a cache")

	clusters := map[structs.ClusterID]*structs.Cluster{"a": {Name: "a", Redis: "a:6379"}, "b": {Name: "b"}}
	nodes := map[structs.NodeID]*structs.Node{"a1": {Name: "a1", Cluster: "a"}, "b1": {Name: "b1", Cluster: "b"}}
	assert.Equal(t, "a:6379", ClusterRedis(clusters, nodes, "a1"))
	assert.Equal(t, "", ClusterRedis(clusters, nodes, "b1"))
	assert.Equal(t, "", ClusterRedis(clusters, nodes, "gone"))
}
