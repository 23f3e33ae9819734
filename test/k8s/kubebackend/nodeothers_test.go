package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestNodeCapacityLessOtherPods: what Pods that are not atom's (a
// DaemonSet's: a log shipper, the device plugin) ask on a node is not
// atom's to hand out: the kubelet counts it when it admits a task Pod,
// and refused (OutOfcpu) one that asked the whole node's allocatable
// CPUs, as a job of all its GPUs does. The node's capacity follows them.
func TestNodeCapacityLessOtherPods(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100", CPU: "96", Memory: "1Ti"})
	ctx := context.Background()
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vector-x1", Namespace: "default", Labels: map[string]string{"app.kubernetes.io/name": "vector"}},
		Spec: corev1.PodSpec{NodeName: "gpu-1", Containers: []corev1.Container{{Name: "vector", Image: "timberio/vector:0.46.1-debian",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	_, err := c.Admin.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	capacity := func() structs.Resources {
		ns, err := co.Nodes(ctx)
		require.NoError(t, err)
		require.Len(t, ns, 1)
		return ns[0].Capacity
	}
	require.Eventually(t, func() bool {
		got := capacity()
		return got.MilliCPU == 95900 && got.Memory == 1<<40-256<<20 && got.Accels == 8
	}, 30*time.Second, 50*time.Millisecond, "gpu-1 less the other Pod: %+v", capacity())

	// An 8-GPU job gets the CPUs and memory left, which the kubelet admits.
	id := co.submit(t, "kind: command\nname: all-gpus\ncommand: [train]\nresources: {accelerators: {type: A100, count: 8}}\n")
	_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Equal(t, int64(8*(95900/8)), tasks[0].Resources.MilliCPU, "the CPUs bound to its GPUs, of those left")

	// The other Pod goes: its share comes back.
	require.NoError(t, c.Admin.CoreV1().Pods("default").Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	require.Eventually(t, func() bool { return capacity().MilliCPU == 96000 }, 30*time.Second, 50*time.Millisecond)
}
