package sched_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

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
	full := sched.ExecutorPod{Requests: j.Spark.ExecutorResources()}
	tp, err := sched.PlaceExecutor(snap, j, driver, full)
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "c2", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}}, tp, "best fit: the node with the fewest free cores")
	j.Spark.Executor.NodeSelector = map[string]string{"disk": "ssd"}
	tp, err = sched.PlaceExecutor(snap, j, driver, full)
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c3"), tp.Node)
	j.Spark.Executor.Cores = 17
	_, err = sched.PlaceExecutor(snap, j, driver, sched.ExecutorPod{Requests: j.Spark.ExecutorResources()})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public has room for an executor of job s (cpu=17 memory=9Gi): does not fit now")
}

// An executor Pod's own node selector, required node affinity and
// tolerations narrow its job's: the executor goes only where both allow,
// and waits, saying why, when no node does. It is placed at what its Pod
// asks, at most its job's executor.
func TestPlaceExecutorPodConstraints(t *testing.T) {
	c1, c2, c3 := st.CPUNode("c1", 16, 64), st.CPUNode("c2", 16, 64), st.CPUNode("c3", 32, 64)
	c2.Tags["disk"], c3.Tags["disk"] = "ssd", "hdd"
	c2.Tags["zone"], c3.Tags["zone"] = "a", "b"
	c3.Taints = []corev1.Taint{{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoExecute}}
	driver := &structs.Task{ID: "s-0-a0", Job: "s", Node: "c1", Pool: structs.PublicPool, State: structs.TaskRunning,
		Resources: structs.Resources{MilliCPU: 2000, Memory: 4 * st.Gi}}
	j := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Obj()
	j.State = structs.JobRunning
	j.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	j.Spark = &structs.Spark{Executor: structs.SparkExecutor{Instances: 2, Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi}}
	snap := &sched.Snapshot{Nodes: []*structs.Node{c1, c2, c3}, Jobs: map[structs.JobID]*structs.Job{"s": j}, Tasks: []*structs.Task{driver}}
	full := j.Spark.ExecutorResources()
	spot := []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoExecute}}
	place := func(p sched.ExecutorPod) (structs.NodeID, error) {
		tp, err := sched.PlaceExecutor(snap, j, driver, p)
		return tp.Node, err
	}

	n, err := place(sched.ExecutorPod{Requests: full})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c1"), n, "best fit, the tainted c3 left out: the Pod does not tolerate spot")
	n, err = place(sched.ExecutorPod{Requests: full, Tolerations: spot, NodeSelector: map[string]string{"disk": "hdd"}})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c3"), n, "tolerated by the job and the Pod, selected by the Pod")
	aff := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}},
			{Key: "disk", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"hdd"}}}},
	}}
	n, err = place(sched.ExecutorPod{Requests: full, Tolerations: spot, Affinity: aff})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c2"), n, "zone In (a, b) and disk NotIn (hdd)")
	// Terms are ORed; Exists and DoesNotExist.
	aff = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpDoesNotExist}, {Key: "gpu", Operator: corev1.NodeSelectorOpExists}}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}, {Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}},
	}}
	n, err = place(sched.ExecutorPod{Requests: full, Tolerations: spot, Affinity: aff})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c3"), n)
	// Gt on a label's number; matchFields on the node's name.
	c2.Tags["rank"], c3.Tags["rank"] = "3", "9"
	n, err = place(sched.ExecutorPod{Requests: full, Tolerations: spot, Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rank", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}}}}}}})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c3"), n)
	n, err = place(sched.ExecutorPod{Requests: full, Tolerations: spot, Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"c2"}}}}}}})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("c2"), n)

	// The job's constraints still hold: its selector leaves c2 out.
	j.Selector = "disk!=ssd"
	_, err = place(sched.ExecutorPod{Requests: full, NodeSelector: map[string]string{"disk": "ssd"}})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public has room for an executor of job s (cpu=4 memory=9Gi) that its Pod allows "+
		"(3 nodes: 2 not matching its node selector or required node affinity): does not fit now")
	j.Selector = ""

	// No node meets the Pod's own constraints: it waits, saying why.
	_, err = place(sched.ExecutorPod{Requests: full, NodeSelector: map[string]string{"disk": "nvme"}})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public meets the executor Pod's own node selector, node affinity and tolerations "+
		"(3 nodes: 3 not matching its node selector or required node affinity): does not fit now")
	_, err = place(sched.ExecutorPod{Requests: full, Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"hdd"}}}}}}})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public meets the executor Pod's own node selector, node affinity and tolerations "+
		"(3 nodes: 2 not matching its node selector or required node affinity, 1 with a taint it does not tolerate, such as spot=true:NoExecute): does not fit now")
	_, err = place(sched.ExecutorPod{Requests: full, Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: "Near", Values: []string{"x"}}}}}}})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.ErrorContains(t, err, "3 nodes: 3 not matching its node selector or required node affinity: ")
	assert.ErrorContains(t, err, `"Near"`)

	// Placed at what the Pod asks: 14 cores free on c1, 16 on c2; a
	// 1-core executor goes to c1 even beside twelve more cores' worth.
	small := structs.Resources{MilliCPU: 1000, Memory: 2 * st.Gi}
	tp, err := sched.PlaceExecutor(snap, j, driver, sched.ExecutorPod{Requests: small})
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "c1", Pool: structs.PublicPool, Resources: small}, tp)
	_, err = place(sched.ExecutorPod{Requests: structs.Resources{MilliCPU: 4000, Memory: 10 * st.Gi}})
	require.Error(t, err)
	require.NotErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "the executor Pod asks for cpu 4000m, memory 10737418240 bytes, 0 GPUs: more than job s's executor (cpu=4 memory=9Gi), which its quota was charged for")
}
