package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A spark job is charged at submit for its driver and its most executors;
// GPU executors are charged by GPU type, as any GPU replica is.
func TestSparkCharge(t *testing.T) {
	snap := &sched.Snapshot{Nodes: []*structs.Node{st.C64("c1"), st.G8("g1", "A")},
		Quotas: map[structs.Scope]structs.ResourceList{"user:u1": {structs.KeyCPU: 64000, structs.KeyMemory: 256 * st.Gi, "gpu/A": 8}}}
	j := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Obj()
	j.Spark = &structs.Spark{MainApplicationFile: "local:///a.py", ServiceAccount: "spark",
		Executor:          structs.SparkExecutor{Cores: 4, Memory: 8 * st.Gi}, // overhead: Spark's max(384 MiB, 10%)
		DynamicAllocation: &structs.SparkDynamicAllocation{MaxExecutors: 5}}
	adm, err := sched.Admit(snap, j)
	require.NoError(t, err)
	over := int64(8*st.Gi/10) >> 20 << 20 // 819 MiB
	assert.Equal(t, structs.ResourceList{structs.KeyCPU: 2000 + 5*4000, structs.KeyMemory: 4*st.Gi + 5*(8*st.Gi+over)}, adm.Charge)
	j.Spark.Executor = structs.SparkExecutor{Cores: 4, Memory: 2 * st.Gi, GPU: &structs.SparkGPU{Type: "A", Amount: 1, Vendor: "nvidia.com", DiscoveryScript: "/x"}}
	adm, err = sched.Admit(snap, j)
	require.NoError(t, err)
	assert.Equal(t, structs.ResourceList{structs.KeyCPU: 2000, structs.KeyMemory: 4 * st.Gi, "gpu/A": 5}, adm.Charge)
	j.Spark.DynamicAllocation.MaxExecutors = 9
	_, err = sched.Admit(snap, j)
	require.ErrorIs(t, err, sched.ErrQuotaExceeded)
	assert.EqualError(t, err, "quota exceeded for user:u1: gpu/A quota 8, in use 0, requested 9")
}

// An executor goes where a one-replica job of its job would: in its
// driver's cluster and pool, on nodes its selector and the executor's
// nodeSelector match, best fit.
func TestPlaceExecutor(t *testing.T) {
	c1, c2, c3 := st.C64("c1"), st.CPUNode("c2", 16, 64), st.CPUNode("c3", 16, 64)
	c3.Tags["disk"] = "ssd"
	other := st.CPUNode("o1", 8, 64)
	other.Cluster = "other"
	driver := &structs.Task{ID: "s-0-a0", Job: "s", Node: "c1", Pool: structs.PublicPool, State: structs.TaskRunning,
		Resources: structs.Resources{MilliCPU: 2000, Memory: 4 * st.Gi}}
	j := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Obj()
	j.State = structs.JobRunning
	j.Spark = &structs.Spark{Executor: structs.SparkExecutor{Instances: 2, Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi}}
	snap := &sched.Snapshot{Nodes: []*structs.Node{c1, c2, c3, other}, Jobs: map[structs.JobID]*structs.Job{"s": j}, Tasks: []*structs.Task{driver}}
	tp, err := sched.PlaceExecutor(snap, j, driver)
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "c2", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}}, tp, "best fit: the node with the fewest free cores")
	j.Spark.Executor.NodeSelector = map[string]string{"disk": "ssd"}
	tp, err = sched.PlaceExecutor(snap, j, driver)
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c3"), tp.Node)
	j.Spark.Executor.Cores = 17
	_, err = sched.PlaceExecutor(snap, j, driver)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public has room for an executor of job s (cpu=17 memory=9Gi): does not fit now")
}
