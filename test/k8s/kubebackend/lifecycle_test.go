package kubebackend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestLifecycle: a coordinator server against a real API server deletes
// a task's Pod once its end is committed (a finished one once kept for its log), deletes atom's Pods
// whose task it does not know, declares the tasks of a node NotReady past
// its grace lost and places the service replica again on another node, and
// notices a Pod deleted by hand.
func TestLifecycle(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-2", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-3", GPUs: 8, GPUModel: "A100"},
	)
	// The backend heartbeats for every Running Pod (kwok's stay Running
	// on a dead node), so what ends a task on a dead node is the NotReady
	// grace, as the log says, not the heartbeat TTL. The TTL is short: no
	// task is lost for its node before the leader has led for one (C20).
	co := startCoordinator(t, 5*time.Second, 2*time.Second, map[string]*k8stest.Cluster{"k8s": c})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("finished", func(t *testing.T) {
		id := co.submit(t, "kind: command\nname: eval\ncommand: [python, eval.py]\nresources: {accelerators: {type: A100, count: 1}}\n")
		_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		require.Len(t, tasks, 1)
		name := kube.PodName(tasks[0].ID)
		assertNoSecrets(ctx, t, c, ns)
		finish(t, c, name, 3)
		j, tasks := co.waitJob(t, id, "fails", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Equal(t, "replica 0 failed with exit code 3: Error", j.Reason)
		assert.Equal(t, 3, tasks[0].ExitCode)
		_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "the finished Pod is kept a while for its log")
		require.Eventually(t, func() bool {
			_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 20*time.Second, 50*time.Millisecond, "the finished Pod is deleted once kept %s", keepFinished)
	})

	t.Run("orphans", func(t *testing.T) {
		// Pods labelled as atom's whose task the state does not know:
		// one never bound, one bound and Running.
		for _, o := range []struct{ name, node string }{{"j-gone-0-aa", ""}, {"j-gone-1-bb", "gpu-3"}} {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: ns,
					Labels:      map[string]string{kube.LabelManaged: "atom", kube.LabelCluster: "k8s", kube.LabelTask: o.name},
					Annotations: map[string]string{kube.LabelTask: o.name}},
				Spec: corev1.PodSpec{SchedulerName: "atom", NodeName: o.node, Containers: []corev1.Container{{Name: kube.ContainerName, Image: "atom/cpu:test"}}},
			}
			_, err := c.Admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		for _, name := range []string{"j-gone-0-aa", "j-gone-1-bb"} {
			require.Eventually(t, func() bool {
				_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}, 30*time.Second, 50*time.Millisecond, "the leader deletes %s", name)
		}
	})

	t.Run("evicted", func(t *testing.T) {
		// The kubelet evicts a Pod: the task is lost, not failed (the
		// job's reason says so; restartPolicy OnFailure would restart it).
		id := co.submit(t, "kind: command\nname: etl\ncommand: [python, etl.py]\nresources: {accelerators: {type: A100, count: 1}}\n")
		_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		require.Len(t, tasks, 1)
		p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(tasks[0].ID), metav1.GetOptions{})
		require.NoError(t, err)
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		p.Status.Conditions, p.Status.ContainerStatuses = nil, nil
		_, err = c.Admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
		j, tasks := co.waitJob(t, id, "ends", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Equal(t, "replica 0 was lost: pod "+ns+"/"+p.Name+" failed outside its task: Evicted: The node was low on resource: memory.", j.Reason)
		assert.Equal(t, structs.TaskLost, tasks[0].State)
		require.Eventually(t, func() bool {
			_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 20*time.Second, 50*time.Millisecond, "the evicted Pod is deleted")
	})

	t.Run("node-not-ready", func(t *testing.T) {
		id := co.submit(t, "kind: service\nname: infer\ncommand: [serve]\nreplicas: 2\nresources: {accelerators: {type: A100, count: 8}}\n")
		co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		before := pods(t, c, id)
		require.Len(t, before, 2)
		dead, other := before[0], before[1]
		c.SetNodeReady(t, dead.Spec.NodeName, false)
		t.Cleanup(func() { c.SetNodeReady(t, dead.Spec.NodeName, true) })

		// Past the grace, the replica on the dead node is placed again
		// on the node left, its old Pod deleted.
		var moved corev1.Pod
		require.Eventually(t, func() bool {
			for _, p := range pods(t, c, id) {
				if replica(p) == replica(dead) && p.UID != dead.UID && p.Status.Phase == corev1.PodRunning {
					moved = p
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "the replica on %s is placed again", dead.Spec.NodeName)
		assert.Contains(t, co.log.String(), `msg="task lost: its node is not ready" cluster=k8s task=`+dead.Annotations["atom.io/task"]+" node="+dead.Spec.NodeName,
			"the grace, not the heartbeat TTL, ended it")
		assert.NotEqual(t, dead.Spec.NodeName, moved.Spec.NodeName)
		assert.NotEqual(t, other.Spec.NodeName, moved.Spec.NodeName)
		_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, dead.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the Pod on the dead node is deleted: %v", err)
		co.waitJob(t, id, "runs its two replicas", func(j *structs.Job, tasks []*structs.Task) bool {
			return j.State == structs.JobRunning && len(running(tasks)) == 2
		})

		// A Pod deleted by hand: noticed, its replica placed again.
		zero := int64(0)
		require.NoError(t, c.Admin.CoreV1().Pods(ns).Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		require.Eventually(t, func() bool {
			n := 0
			for _, p := range pods(t, c, id) {
				if p.Status.Phase == corev1.PodRunning && p.UID != other.UID && p.UID != dead.UID && p.Spec.NodeName != dead.Spec.NodeName {
					n++
				}
			}
			return n == 2
		}, 30*time.Second, 50*time.Millisecond, "the replica deleted by hand runs again")
		_, tasks := co.waitJob(t, id, "runs its two replicas", func(j *structs.Job, tasks []*structs.Task) bool {
			return j.State == structs.JobRunning && len(running(tasks)) == 2
		})
		lost := 0
		for _, task := range tasks {
			if task.State == structs.TaskLost {
				lost++
			}
		}
		assert.Equal(t, 2, lost, "the replica on the dead node and the one deleted by hand were lost")
	})
}

// replica is the replica index of the task of Pod p, as its ID tells it
// (structs.NewTaskID: the job, the index, a suffix).
func replica(p corev1.Pod) string {
	rest := strings.TrimPrefix(p.Annotations[kube.LabelTask], p.Annotations[kube.LabelJob]+"-")
	index, _, _ := strings.Cut(rest, "-")
	return index
}
