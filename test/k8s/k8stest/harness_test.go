package k8stest_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// repoFile returns the path of a file relative to the repository root.
func repoFile(t *testing.T, rel string) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

func gpuPod(name, node string) *corev1.Pod {
	one := corev1.ResourceList{
		k8stest.GPUResource:   resource.MustParse("1"),
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "smoke"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "atom/cpu:test",
				Command:   []string{"/app/atom", "run", "--", "true"},
				Resources: corev1.ResourceRequirements{Requests: one, Limits: one},
			}},
		},
	}
}

// TestHarness starts a real API server with kwok, adds GPU nodes, runs a
// bound GPU Pod and a Pod placed through the Binding API, and checks that
// the coordinator's identity can do exactly what deploy/rbac.yaml grants.
func TestHarness(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Nodes: nvidia.com/gpu, the model label, taints, Ready, no not-ready taint.
	special := corev1.Taint{Key: "atom.dev/pool", Value: "perception", Effect: corev1.TaintEffectNoSchedule}
	a := c.AddGPUNode(t, "gpu-a", 8, "A100")
	b := c.AddGPUNode(t, "gpu-b", 8, "H100", special)
	cpu := c.AddCPUNode(t, "cpu-a", "32", "128Gi")
	for _, n := range []*corev1.Node{a, b, cpu} {
		assert.True(t, k8stest.NodeReady(n), "node %s Ready", n.Name)
		for _, taint := range n.Spec.Taints {
			assert.NotEqual(t, k8stest.NotReadyTaint, taint.Key, "node %s", n.Name)
		}
	}
	gpus := a.Status.Allocatable[k8stest.GPUResource]
	assert.Equal(t, int64(8), gpus.Value())
	assert.Equal(t, "A100", a.Labels[k8stest.GPUModelLabel])
	assert.Equal(t, "H100", b.Labels[k8stest.GPUModelLabel])
	assert.Equal(t, []corev1.Taint{special}, b.Spec.Taints)
	_, hasGPU := cpu.Status.Allocatable[k8stest.GPUResource]
	assert.False(t, hasGPU)

	// Before RBAC is applied the coordinator may do nothing.
	_, err := c.Coordinator.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "list nodes before RBAC: %v", err)

	// A token the API server does not know is refused: 401.
	stranger, err := kubernetes.NewForConfig(c.Config("not-a-token"))
	require.NoError(t, err)
	_, err = stranger.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err), "list nodes with a made-up token: %v", err)

	// deploy/rbac.yaml grants the coordinator what it needs.
	objs := c.ApplyFile(t, repoFile(t, "deploy/rbac.yaml"))
	require.Len(t, objs, 4)
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "coordinator lists nodes once RBAC is applied")
	nodes, err := c.Coordinator.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, nodes.Items, 3)
	_, err = c.Coordinator.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "coordinator lists secrets: %v", err)

	// A Pod bound to its node by spec.nodeName runs (kwok).
	_, err = c.Coordinator.CoreV1().Pods("default").Create(ctx, gpuPod("bound", "gpu-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	p := c.WaitPodPhase(t, "default", "bound", corev1.PodRunning)
	assert.Equal(t, "gpu-a", p.Spec.NodeName)
	assert.NotEmpty(t, p.Status.PodIP)

	// A Pod naming atom as its scheduler waits until the coordinator binds
	// it through the Binding API, then runs.
	pending := gpuPod("via-binding", "")
	pending.Spec.SchedulerName = "atom"
	pending.Spec.Tolerations = []corev1.Toleration{{Key: special.Key, Operator: corev1.TolerationOpEqual, Value: special.Value, Effect: special.Effect}}
	_, err = c.Coordinator.CoreV1().Pods("default").Create(ctx, pending, metav1.CreateOptions{})
	require.NoError(t, err)
	p, err = c.Admin.CoreV1().Pods("default").Get(ctx, "via-binding", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	err = c.Coordinator.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "via-binding"},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "gpu-b"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p = c.WaitPodPhase(t, "default", "via-binding", corev1.PodRunning)
	assert.Equal(t, "gpu-b", p.Spec.NodeName)

	// A node whose kubelet goes silent turns Ready=Unknown; its Pod stays
	// as it was. Handed back to kwok, it is Ready again.
	c.SetNodeReady(t, "gpu-b", false)
	n, err := c.Admin.CoreV1().Nodes().Get(ctx, "gpu-b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, k8stest.NodeReady(n))
	c.WaitPodPhase(t, "default", "via-binding", corev1.PodRunning)
	c.SetNodeReady(t, "gpu-b", true)

	// Deleting with a grace period completes without a kubelet (kwok).
	grace := int64(5)
	require.NoError(t, c.Coordinator.CoreV1().Pods("default").Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool {
		_, err := c.Admin.CoreV1().Pods("default").Get(ctx, "bound", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 15*time.Second, 50*time.Millisecond, "deleted pod goes away")
}

// TestStartTwo starts two independent API servers, as multi-cluster tests
// do: a node added to one is not in the other.
func TestStartTwo(t *testing.T) {
	a, b := k8stest.StartTwo(t, k8stest.Options{})
	require.NotEqual(t, a.Host, b.Host)
	a.AddGPUNode(t, "only-in-a", 4, "A100")
	b.AddCPUNode(t, "only-in-b", "", "")
	ctx := context.Background()
	na, err := a.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	nb, err := b.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, na.Items, 1)
	require.Len(t, nb.Items, 1)
	assert.Equal(t, "only-in-a", na.Items[0].Name)
	assert.Equal(t, "only-in-b", nb.Items[0].Name)
	// Each cluster's tokens are its own.
	_, err = kubernetes.NewForConfigOrDie(b.Config(a.AdminToken)).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "a's token on b: %v", err)
}

// TestKubeScheduler runs the kube-scheduler built from the same module
// (for side-by-side benchmarks): it binds a Pod that names no node.
func TestKubeScheduler(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.StartKubeScheduler(ctx))
	c.AddGPUNode(t, "gpu-1", 8, "A100")
	_, err := c.Admin.CoreV1().Pods("default").Create(ctx, gpuPod("scheduled", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	p := c.WaitPodPhase(t, "default", "scheduled", corev1.PodRunning)
	assert.Equal(t, "gpu-1", p.Spec.NodeName)
}
