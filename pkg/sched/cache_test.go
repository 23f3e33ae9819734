package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// cacheClusters: cluster a has one 8-GPU node (a1), cluster b two (b1,
// b2), so b has the most free accelerators; c (one CPU node) has no cache.
func cacheClusters(t *testing.T) *st.Harness {
	a1, b1, b2, c1 := st.G8("a1", "A"), st.G8("b1", "A"), st.G8("b2", "A"), st.C64("c1")
	a1.Cluster, b1.Cluster, b2.Cluster, c1.Cluster = "a", "b", "b", "c"
	h := st.New(t, a1, b1, b2, c1)
	h.Quota(u1, structs.ResourceList{"gpu/A": 64, structs.KeyCPU: 64000, structs.KeyMemory: 256 << 30})
	return h
}

func withData(b *st.JobBuilder, ds ...string) *structs.Job {
	j := b.Obj()
	j.Datasets, j.CacheMountPath = ds, structs.DefaultCachePath
	return j
}

func placement(t *testing.T, p *sched.Plan, job string) sched.Placement {
	t.Helper()
	for _, pl := range p.Placements {
		if string(pl.Job) == job {
			return pl
		}
	}
	require.Failf(t, "not placed", "job %s: %+v", job, p.Pending[structs.JobID(job)])
	return sched.Placement{}
}

// A job whose datasets cluster a's cache holds lands on a, although b has
// more free accelerators; nothing to warm.
func TestCachePrefersClusterHoldingAllDatasets(t *testing.T) {
	h := cacheClusters(t)
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{
		"a": {"lidar/x": true, "video/y": true},
		"b": {"lidar/x": true},
	}
	h.MustSubmit(withData(st.NewJob("j", "u1").GPU("A", 4), "lidar/x", "video/y"))
	pl := placement(t, h.Cycle(), "j")
	assert.Equal(t, []string{"a1"}, h.NodesOf("j"))
	assert.Empty(t, pl.Warm)
}

// When the cluster holding the data is full, the job goes to the one with
// the most free accelerators and the placement lists what to warm there.
func TestCacheFullClusterFallsBackAndWarms(t *testing.T) {
	h := cacheClusters(t)
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{
		"a": {"lidar/x": true, "video/y": true},
		"b": {"video/y": true},
	}
	h.MustSubmit(st.NewJob("fill", "u1").GPU("A", 8).Node("a1").Obj())
	h.Cycle()
	h.MustSubmit(withData(st.NewJob("j", "u1").GPU("A", 4), "video/y", "lidar/x", "video/y"))
	pl := placement(t, h.Cycle(), "j")
	assert.Equal(t, []string{"b1"}, h.NodesOf("j"))
	assert.Equal(t, []string{"lidar/x"}, pl.Warm)
}

// Without any cache that holds the data, most free accelerators decide
// (b), and everything is warmed there.
func TestCacheNoneHoldsMostFreeAccelerators(t *testing.T) {
	h := cacheClusters(t)
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}, "b": {}}
	h.MustSubmit(withData(st.NewJob("j", "u1").GPU("A", 4), "lidar/x", "video/y"))
	pl := placement(t, h.Cycle(), "j")
	assert.Equal(t, []string{"b1"}, h.NodesOf("j"))
	assert.Equal(t, []string{"lidar/x", "video/y"}, pl.Warm)
}

// A CPU job prefers the cached cluster too (without caches, cluster order
// would pick a); a cluster without a cache never takes a job that mounts
// one (its atom could not mount it: found by a new user, the job failed
// with exit 5 where it landed), even one pinned there: it waits, saying
// why.
func TestCacheCPUJobAndClusterWithoutCache(t *testing.T) {
	a1, b1, c1 := st.C64("a1"), st.C64("b1"), st.C64("c1")
	a1.Cluster, b1.Cluster, c1.Cluster = "a", "b", "c"
	h := st.New(t, a1, b1, c1)
	h.Quota(u1, structs.ResourceList{structs.KeyCPU: 64000, structs.KeyMemory: 256 << 30})
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}, "b": {"lidar/x": true}}
	h.MustSubmit(withData(st.NewJob("cached", "u1").CPU(2, 4), "lidar/x"))
	h.MustSubmit(withData(st.NewJob("nowhere", "u1").CPU(2, 4), "video/y"))
	nocache := withData(st.NewJob("nocache", "u1").CPU(2, 4), "video/y")
	nocache.Cluster = "c"
	h.MustSubmit(nocache)
	p := h.Cycle()
	assert.Equal(t, []string{"b1"}, h.NodesOf("cached"))
	assert.Empty(t, placement(t, p, "cached").Warm)
	assert.Equal(t, []string{"a1"}, h.NodesOf("nowhere"))
	assert.Equal(t, []string{"video/y"}, placement(t, p, "nowhere").Warm)
	assert.Empty(t, h.NodesOf("nocache"))
	why := p.Pending[nocache.ID]
	require.NotNil(t, why)
	assert.Equal(t, "can never fit; 0/1 nodes fit: 1 in clusters without a dataset cache (no redis in their cluster config)", why.Message)

	// Unpinned, with a and b full, it waits rather than go to c.
	h2 := st.New(t, func() []*structs.Node {
		a, b, c := st.C64("a1"), st.C64("b1"), st.C64("c1")
		a.Cluster, b.Cluster, c.Cluster = "a", "b", "c"
		return []*structs.Node{a, b, c}
	}()...)
	h2.Quota(u1, structs.ResourceList{structs.KeyCPU: 192000, structs.KeyMemory: 768 << 30})
	h2.Snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}, "b": {}}
	h2.MustSubmit(withData(st.NewJob("fill-a", "u1").CPU(64, 128), "d"))
	h2.MustSubmit(withData(st.NewJob("fill-b", "u1").CPU(64, 128), "d"))
	h2.Cycle()
	h2.MustSubmit(withData(st.NewJob("late", "u1").CPU(2, 4), "d"))
	h2.Cycle()
	assert.Empty(t, h2.NodesOf("late"), "not on c, which has no cache")
}

// A job pinned to a cluster goes there even if another holds the data,
// and warms the pinned cluster's cache.
func TestCachePinnedClusterIsWarmed(t *testing.T) {
	h := cacheClusters(t)
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}, "b": {"lidar/x": true}}
	j := withData(st.NewJob("j", "u1").GPU("A", 2), "lidar/x")
	j.Cluster = "a"
	h.MustSubmit(j)
	pl := placement(t, h.Cycle(), "j")
	assert.Equal(t, []string{"a1"}, h.NodesOf("j"))
	assert.Equal(t, []string{"lidar/x"}, pl.Warm)
}

// Two pending jobs that differ only in mounting the dataset cache ask
// different questions: the one that mounts it is told about the cluster
// without a cache, whichever of the two is explained first.
func TestCacheWhyNotSharedWithJobWithoutCache(t *testing.T) {
	a1, c1 := st.C64("a1"), st.C64("c1")
	a1.Cluster, c1.Cluster = "a", "c"
	h := st.New(t, a1, c1)
	h.Quota(u1, structs.ResourceList{structs.KeyCPU: 256000, structs.KeyMemory: 1024 << 30})
	h.Snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}}
	h.MustSubmit(st.NewJob("fill-a", "u1").CPU(64, 128).Node("a1").Obj())
	h.MustSubmit(st.NewJob("fill-c", "u1").CPU(64, 128).Node("c1").Obj())
	h.Cycle()
	plain := st.NewJob("a-plain", "u1").CPU(2, 4).Obj()
	cached := st.NewJob("b-cached", "u1").CPU(2, 4).Obj()
	cached.CacheMountPath = structs.DefaultCachePath
	h.MustSubmit(plain)
	h.MustSubmit(cached)
	p := h.Cycle()
	require.NotNil(t, p.Pending[plain.ID])
	require.NotNil(t, p.Pending[cached.ID])
	assert.NotSame(t, p.Pending[plain.ID], p.Pending[cached.ID])
	assert.Equal(t, "does not fit now; 0/2 nodes fit: 2 without enough free resources now", p.Pending[plain.ID].Message)
	assert.Equal(t, "does not fit now; 0/2 nodes fit: 1 in clusters without a dataset cache (no redis in their cluster config), 1 without enough free resources now",
		p.Pending[cached.ID].Message)
}
