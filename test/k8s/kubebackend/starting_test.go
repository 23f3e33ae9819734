package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestStartingPodNotLost: a task whose Pod is bound but still Pending
// (its kubelet pulls the image: minutes for a CUDA image) is not lost
// after the heartbeat TTL, though atom in it cannot heartbeat yet: the
// leader heartbeats for it (it was lost, "no heartbeat for 2s", and its
// Pod deleted). A Pod whose container cannot start (a Secret the job
// names is not there) is lost saying why, not left Pending.
func TestStartingPodNotLost(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-slow", CPU: "16", Memory: "64Gi", Labels: map[string]string{"pull": "slow"}})
	ctx := context.Background()
	// kwok stops playing its kubelet, the Node stays Ready: Pods bound
	// there stay Pending, as while an image is pulled.
	require.NoError(t, c.StopNode(ctx, "cpu-slow"))
	n, err := c.Admin.CoreV1().Nodes().Get(ctx, "cpu-slow", metav1.GetOptions{})
	require.NoError(t, err)
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
	_, err = c.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	const ttl = 2 * time.Second
	co := startCoordinator(t, ttl, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	require.Eventually(t, func() bool {
		ns, err := co.Nodes(ctx)
		return err == nil && len(ns) == 1 && ns[0].State == structs.NodeReady
	}, 30*time.Second, 50*time.Millisecond, "cpu-slow is ready")

	id := co.submit(t, "kind: command\nname: big-image\ncommand: [train]\nselector: pull=slow\nresources: {cpu: \"1\", memory: 1Gi}\n")
	_, tasks := co.waitJob(t, id, "is placed", func(_ *structs.Job, ts []*structs.Task) bool { return len(ts) == 1 })
	pod := c.WaitPod(t, ns, kube.PodName(tasks[0].ID), 30*time.Second, func(p *corev1.Pod) bool { return p.Spec.NodeName == "cpu-slow" })
	require.Equal(t, corev1.PodPending, pod.Status.Phase)
	require.Never(t, func() bool {
		st, err := co.Job(ctx, id)
		return err != nil || len(st.Tasks) != 1 || st.Tasks[0].State != structs.TaskScheduled
	}, 3*ttl, 100*time.Millisecond, "the task stays Scheduled while its Pod is Pending, past the TTL")

	// The kubelet cannot make its container: a Secret is not there.
	pod, err = c.Admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "wandb" not found`}}}}
	_, err = c.Admin.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	want := "lost: pod " + ns + "/" + pod.Name + ` cannot start: CreateContainerConfigError: secret "wandb" not found`
	co.waitJob(t, id, "its task is lost, saying why", func(_ *structs.Job, ts []*structs.Task) bool {
		for _, x := range ts {
			if x.ID == tasks[0].ID && x.State == structs.TaskLost && x.Message == want {
				return true
			}
		}
		return false
	})
}
