package k8stest_test

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// toolboxPod is a Pod of k8stest.ToolboxImage bound to node, running steps.
func toolboxPod(name, node string, restart corev1.RestartPolicy, steps ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: new(int64(2)),
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           k8stest.ToolboxImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            steps,
			}},
		},
	}
}

// TestRealNode starts a real kubelet node with fake GPUs: it is Ready with
// its GPUs, labels and no not-ready taint; a Pod of the toolbox image runs,
// its log is read (and followed) through the API server, exec works, and a
// container's exit code is in the Pod's status.
func TestRealNode(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	n := c.AddRealNode(t, k8stest.RealNodeOptions{Name: "real-1", GPUs: 4, GPUModel: "H100", Pool: "perception", Labels: map[string]string{"rack": "r7"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	node, err := c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, k8stest.NodeReady(node), "node Ready")
	gpus := node.Status.Allocatable[k8stest.GPUResource]
	assert.Equal(t, int64(4), gpus.Value(), "allocatable nvidia.com/gpu")
	gpus = node.Status.Capacity[k8stest.GPUResource]
	assert.Equal(t, int64(4), gpus.Value(), "capacity nvidia.com/gpu")
	assert.Equal(t, "H100", node.Labels[k8stest.GPUModelLabel])
	assert.Equal(t, "perception", node.Labels[k8stest.PoolLabel])
	assert.Equal(t, "r7", node.Labels["rack"])
	assert.Empty(t, node.Spec.Taints, "no taints (not-ready removed)")
	assert.Equal(t, "v1.37.2", node.Status.NodeInfo.KubeletVersion)
	assert.Contains(t, node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://")
	assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: k8stest.RealNodeIP})
	assert.NotContains(t, node.Annotations, k8stest.KwokNodeAnnotation)

	// The fake GPUs stay: the kubelet's own status updates keep them.
	require.Never(t, func() bool {
		node, err := c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		q := node.Status.Allocatable[k8stest.GPUResource]
		return err != nil || q.Value() != 4
	}, 12*time.Second, time.Second, "the kubelet dropped the GPUs from the node's status")

	// A Pod asking for GPUs runs; its log is followed as it is written.
	pod := toolboxPod("counter", n.Name, corev1.RestartPolicyNever, "print:started", "count:5:300ms", "print:done")
	one := corev1.ResourceList{k8stest.GPUResource: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: one, Limits: one}
	created := time.Now()
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	running := c.WaitPod(t, "default", "counter", time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded
	})
	t.Logf("pod created -> %s in %.2fs", running.Status.Phase, time.Since(created).Seconds())
	assert.True(t, strings.HasPrefix(running.Status.PodIP, "10.89.0."), "Pod IP %q in %s", running.Status.PodIP, k8stest.RealNodePodCIDR)
	stream, err := c.Admin.CoreV1().Pods("default").GetLogs("counter", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	require.NoError(t, err)
	var lines []string
	sc := bufio.NewScanner(stream)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	stream.Close()
	require.NoError(t, sc.Err())
	assert.Equal(t, []string{"started", "line 1", "line 2", "line 3", "line 4", "line 5", "done"}, lines, "followed log")
	done := c.WaitPodPhase(t, "default", "counter", corev1.PodSucceeded)
	require.Len(t, done.Status.ContainerStatuses, 1)
	assert.Contains(t, done.Status.ContainerStatuses[0].ContainerID, "containerd://")

	// A failing container's exit code reaches the Pod's status.
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, toolboxPod("fails", n.Name, corev1.RestartPolicyNever, "stderr:giving up", "exit:3"), metav1.CreateOptions{})
	require.NoError(t, err)
	failed := c.WaitPodPhase(t, "default", "fails", corev1.PodFailed)
	require.Len(t, failed.Status.ContainerStatuses, 1)
	term := failed.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "terminated state")
	assert.Equal(t, int32(3), term.ExitCode)
	logs, err := c.Admin.CoreV1().Pods("default").GetLogs("fails", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "giving up\n", string(logs))

	// exec in a running container.
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, toolboxPod("waits", n.Name, corev1.RestartPolicyNever, "print:up", "wait"), metav1.CreateOptions{})
	require.NoError(t, err)
	c.WaitPodPhase(t, "default", "waits", corev1.PodRunning)
	req := c.Admin.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("waits").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"/toolbox", "env:HOSTNAME", "print:from exec"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(c.AdminConfig, "GET", req.URL().String())
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}), "exec: %s", stderr.String())
	assert.Equal(t, "waits\nfrom exec\n", stdout.String())

	// Deleted, the Pod's container gets SIGTERM and the Pod goes.
	require.NoError(t, c.Admin.CoreV1().Pods("default").Delete(ctx, "waits", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := c.Admin.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{})
		return err != nil
	}, 30*time.Second, 100*time.Millisecond, "deleted Pod on the real node goes away (the kubelet stops it and removes it)")
}

// TestRealNodeWithKwok mixes the real node with kwok nodes in one cluster:
// kwok leaves the real node and its Pods alone, the kubelet runs only the
// Pods bound to it.
func TestRealNodeWithKwok(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	c.AddGPUNode(t, "kwok-1", 8, "A100")
	n := c.AddRealNode(t, k8stest.RealNodeOptions{Name: "real-1", GPUs: 2, GPUModel: "H100"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, name := range []string{"kwok-1", n.Name} {
		_, err := c.Admin.CoreV1().Pods("default").Create(ctx, toolboxPod("on-"+name, name, corev1.RestartPolicyNever, "print:hi", "wait"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	onKwok := c.WaitPodPhase(t, "default", "on-kwok-1", corev1.PodRunning)
	onReal := c.WaitPodPhase(t, "default", "on-real-1", corev1.PodRunning)
	assert.NotContains(t, onKwok.Status.PodIP, "10.89.0.", "kwok's Pod IP comes from kwok's range")
	assert.True(t, strings.HasPrefix(onReal.Status.PodIP, "10.89.0."), "real Pod IP %q", onReal.Status.PodIP)
	require.Len(t, onReal.Status.ContainerStatuses, 1)
	assert.Contains(t, onReal.Status.ContainerStatuses[0].ContainerID, "containerd://", "the real Pod's container is containerd's")
	logs, err := c.Admin.CoreV1().Pods("default").GetLogs("on-real-1", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(logs))

	// A Pod whose image the real node does not have is not made Running by
	// kwok: the kubelet says it may not pull it.
	missing := toolboxPod("no-image", n.Name, corev1.RestartPolicyNever)
	missing.Spec.Containers[0].Image = "atom.test/not-imported:1"
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, missing, metav1.CreateOptions{})
	require.NoError(t, err)
	p := c.WaitPod(t, "default", "no-image", time.Minute, func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ErrImageNeverPull"
	})
	assert.Equal(t, corev1.PodPending, p.Status.Phase)

	// kwok's node is still kwok's, the real one the kubelet's.
	nodes, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 2)
	for _, node := range nodes.Items {
		assert.True(t, k8stest.NodeReady(&node), "node %s Ready", node.Name)
		if node.Name == n.Name {
			assert.Equal(t, "v1.37.2", node.Status.NodeInfo.KubeletVersion)
			assert.NotContains(t, node.Annotations, k8stest.KwokNodeAnnotation)
		} else {
			assert.Equal(t, k8stest.KwokNodeAnnotationValue, node.Annotations[k8stest.KwokNodeAnnotation])
		}
	}
}

// TestRealNodeFaults stops the kubelet (its container keeps running; the
// Node is marked Unknown as the node lifecycle controller would), starts
// it again (Ready, GPUs kept, the Pod still Running with the same
// container), and restarts containerd (Pods keep running, new ones start).
func TestRealNodeFaults(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	n := c.AddRealNode(t, k8stest.RealNodeOptions{GPUs: 8, GPUModel: "A100"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.Admin.CoreV1().Pods("default").Create(ctx, toolboxPod("long", n.Name, corev1.RestartPolicyNever, "print:up", "wait"), metav1.CreateOptions{})
	require.NoError(t, err)
	before := c.WaitPodPhase(t, "default", "long", corev1.PodRunning)
	require.Len(t, before.Status.ContainerStatuses, 1)

	n.StopKubelet(t)
	assert.Zero(t, n.KubeletPID())
	require.NoError(t, c.SetNodeUnknown(ctx, n.Name))
	node, err := c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, k8stest.NodeReady(node), "node NotReady once marked Unknown")
	out, err := n.Ctr("tasks", "ls").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), strings.TrimPrefix(before.Status.ContainerStatuses[0].ContainerID, "containerd://"), "the container runs on without its kubelet")

	n.StartKubelet(t)
	node, err = c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, k8stest.NodeReady(node))
	gpus := node.Status.Allocatable[k8stest.GPUResource]
	assert.Equal(t, int64(8), gpus.Value(), "GPUs after the kubelet's restart")
	after := c.WaitPodPhase(t, "default", "long", corev1.PodRunning)
	assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID, "same container")
	assert.Zero(t, after.Status.ContainerStatuses[0].RestartCount)

	n.RestartContainerd(t)
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, toolboxPod("after-restart", n.Name, corev1.RestartPolicyNever, "print:fine"), metav1.CreateOptions{})
	require.NoError(t, err)
	c.WaitPodPhase(t, "default", "after-restart", corev1.PodSucceeded)
	c.WaitPodPhase(t, "default", "long", corev1.PodRunning)
	logs, err := c.Admin.CoreV1().Pods("default").GetLogs("long", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "up\n", string(logs))
}
