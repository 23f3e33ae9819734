package kubebackend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestMultiCluster: one coordinator server drives two clusters, each
// its own API server: a job lands on the cluster where it fits, and,
// where both fit, on the one with more free GPUs of the type it asks for.
func TestMultiCluster(t *testing.T) {
	a, b := k8stest.StartTwo(t, k8stest.Options{})
	prepare(t, a)
	prepare(t, b)
	a.AddNodes(t,
		k8stest.NodeSpec{Name: "a-gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "a-gpu-2", GPUs: 8, GPUModel: "A100"},
	)
	b.AddNodes(t,
		k8stest.NodeSpec{Name: "b-gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "b-gpu-2", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "b-gpu-3", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "b-gpu-4", GPUs: 8, GPUModel: "A100"},
	)
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"a": a, "b": b})

	// Three 8-GPU replicas fit only on b (a has two nodes).
	big := co.submit(t, "kind: command\nname: big\ncommand: [python, train.py]\nreplicas: 3\nresources: {accelerators: {type: A100, count: 8}}\n")
	_, tasks := co.waitJob(t, big, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, tasks, 3)
	onB := pods(t, b, big)
	require.Len(t, onB, 3)
	for _, p := range onB {
		assert.Equal(t, corev1.PodRunning, p.Status.Phase)
		assert.Equal(t, "b", p.Labels["atom.io/cluster"])
	}
	assert.Empty(t, pods(t, a, big))

	// Now both fit one 8-GPU replica: a has 16 A100 free, b 8.
	small := co.submit(t, "kind: command\nname: small\ncommand: [python, eval.py]\nresources: {accelerators: {type: A100, count: 8}}\n")
	_, tasks = co.waitJob(t, small, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, tasks, 1)
	onA := pods(t, a, small)
	require.Len(t, onA, 1)
	assert.Equal(t, string(tasks[0].Node), onA[0].Spec.NodeName)
	assert.Equal(t, "a", onA[0].Labels["atom.io/cluster"])
	assert.Empty(t, pods(t, b, small))

}
