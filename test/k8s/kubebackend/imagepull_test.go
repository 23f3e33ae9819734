package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestImagePullFailing: a task Pod that cannot pull its image (a tag that
// is not there) is heartbeaten while Kubernetes retries, and lost saying
// why once it has failed for ImagePullGrace: not Scheduled for ever.
func TestImagePullFailing(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "16", Memory: "64Gi"})
	ctx := context.Background()
	// kwok stops playing its kubelet, the Node stays Ready: the Pod stays
	// Pending, its status this test's to write.
	require.NoError(t, c.StopNode(ctx, "cpu-1"))
	n, err := c.Admin.CoreV1().Nodes().Get(ctx, "cpu-1", metav1.GetOptions{})
	require.NoError(t, err)
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
	_, err = c.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	rec := &recorder{}
	b, err := kube.New(ctx, kube.Config{Cluster: "k8s", Client: c.Coordinator, Namespace: ns, Coordinator: "http://coord-0:8080",
		Heartbeat: 50 * time.Millisecond, ImagePullGrace: time.Second}, rec)
	require.NoError(t, err)
	defer b.Close()
	job := &structs.Job{ID: "j-pull", Name: "pull", Kind: structs.KindCommand, Owner: "alice", Priority: structs.PriorityNormal,
		Image: "registry.local/team/app:no-such-tag", Command: []string{"serve"}, Replicas: 1,
		Resources: structs.Resources{MilliCPU: 1000, Memory: 1 << 30}}
	task := &structs.Task{ID: structs.MakeTaskID(job.ID, 0, 0), Job: job.ID, Node: "cpu-1", Priority: job.Priority,
		State: structs.TaskScheduled, Resources: job.Resources}
	require.NoError(t, b.Start(backend.Launch{Task: task, Job: job, Token: "secret-token-0-abcdef"}))
	p := c.WaitPod(t, ns, kube.PodName(task.ID), 30*time.Second, func(p *corev1.Pod) bool { return p.Spec.NodeName == "cpu-1" })
	require.Eventually(t, func() bool { return rec.token(task.ID) != "" }, 10*time.Second, 20*time.Millisecond, "heartbeaten while Pending")

	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, Image: job.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
			Message: `Back-off pulling image "registry.local/team/app:no-such-tag"`}}}}
	_, err = c.Admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	ev := rec.wait(t, task.ID, structs.TaskLost)
	assert.Equal(t, "pod "+ns+"/"+p.Name+` has not pulled its image for 1s: ImagePullBackOff: Back-off pulling image "registry.local/team/app:no-such-tag"`, ev.Message)
}
