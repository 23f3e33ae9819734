package kubebackend_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestGangs runs gangs through a coordinator server against a real API
// server with four 8-GPU kwok nodes: a 4 × 8-GPU MPI job as four Pods
// bound (only once all four exist) to four distinct nodes, deleted once
// the launcher has succeeded; a gang whose fourth Pod the namespace's
// ResourceQuota refuses, of which no Pod is ever bound; a normal job
// preempting a low one.
func TestGangs(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-2", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-3", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-4", GPUs: 8, GPUModel: "A100"},
	)
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("mpi", func(t *testing.T) {
		pw := watchPods(t, c)
		id := co.submit(t, "kind: mpi\nname: allreduce\nimage: atom/openmpi:test\ncommand: [python, allreduce.py]\n"+
			"env: {NCCL_DEBUG: INFO}\nreplicas: 4\nresources: {cpu: \"32\", memory: 256Gi, accelerators: {type: A100, count: 8}}\n")
		_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		require.Len(t, tasks, 4)
		nodes := map[string]bool{}
		for _, task := range tasks {
			p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(task.ID), metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			assert.Equal(t, string(task.Node), p.Spec.NodeName)
			nodes[p.Spec.NodeName] = true
			assert.Equal(t, "atom", p.Spec.SchedulerName, "bound by atom, no other scheduler")
			assert.Equal(t, "atom-normal", p.Spec.PriorityClassName)
			require.NotNil(t, p.Spec.Priority)
			assert.EqualValues(t, 10000, *p.Spec.Priority)
			ct := p.Spec.Containers[0]
			assert.Equal(t, "atom/openmpi:test", ct.Image)
			assert.Equal(t, []string{"run", "--grace", "2s", "--", "python", "allreduce.py"}, ct.Args)
			// A replica that takes a whole node's GPUs is given the
			// node's CPU and memory (kwok's: 96 cores, 1Ti).
			assert.Equal(t, structs.Resources{MilliCPU: 96000, Memory: 1 << 40, AccelType: "A100", Accels: 8}, task.Resources)
			want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
				kube.GPUResource: resource.MustParse("8")}
			assert.Len(t, ct.Resources.Requests, 3)
			for k, v := range want {
				assert.True(t, v.Equal(ct.Resources.Requests[k]), "request %s: %v", k, ct.Resources.Requests)
				assert.True(t, v.Equal(ct.Resources.Limits[k]), "limit %s", k)
			}
			e := env(t, ct, exchange(ctx, t, c, co, p))
			for k, v := range map[string]string{"ATOM_JOB_KIND": "mpi", "ATOM_JOB_ID": string(id), "ATOM_TASK_ID": string(task.ID),
				"ATOM_REPLICA": fmt.Sprint(task.Index), "ATOM_REPLICAS": "4", "ATOM_NODE": string(task.Node),
				"ATOM_ACCEL_TYPE": "A100", "ATOM_ACCELERATORS": "0,1,2,3,4,5,6,7", "NCCL_DEBUG": "INFO"} {
				assert.Equal(t, v, e[k].Value, k)
			}
			assert.Equal(t, map[string]string{"atom.io/managed-by": "atom", "atom.io/cluster": "k8s", "atom.io/job": kube.LabelValue(string(id))}, p.Labels)
		}
		assert.Len(t, nodes, 4, "four distinct GPU nodes")

		// All or none: every Pod of the gang existed before any was bound.
		before := map[string]bool{}
		bound := false
		for _, p := range pw.drain() {
			if p.Labels["atom.io/job"] != kube.LabelValue(string(id)) {
				continue
			}
			if p.Spec.NodeName != "" {
				bound = true
				break
			}
			before[p.Name] = true
		}
		assert.True(t, bound)
		assert.Len(t, before, 4, "the four Pods were created, unbound, before the first was bound")

		// The launcher (replica 0) exits 0: the job succeeds, and every
		// Pod of it goes (no Secret was ever made).
		var launcher *structs.Task
		for _, task := range tasks {
			if task.Index == 0 {
				launcher = task
			}
		}
		finish(t, c, kube.PodName(launcher.ID), 0)
		j, _ := co.waitJob(t, id, "succeeds", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobSucceeded, j.State)
		require.Eventually(t, func() bool { return len(pods(t, c, id)) == 0 }, 30*time.Second, 50*time.Millisecond, "the job's Pods are deleted")
		assertNoSecrets(ctx, t, c, ns)
	})

	t.Run("all-or-none", func(t *testing.T) {
		// The namespace may hold three Pods. No controller computes the
		// quota's status here, so it is set by hand; the API server's
		// quota admission then counts against it.
		q, err := c.Admin.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "three-pods", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		_, err = c.Admin.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{})
		require.NoError(t, err)
		defer func() { _ = c.Admin.CoreV1().ResourceQuotas(ns).Delete(ctx, q.Name, metav1.DeleteOptions{}) }()
		// Until the quota admission has the status, it refuses every Pod:
		// wait until it admits one (a dry run, which uses nothing).
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe"}}}}
		require.Eventually(t, func() bool {
			_, err := c.Admin.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil
		}, 20*time.Second, 50*time.Millisecond, "the quota admission knows the quota's status")

		pw := watchPods(t, c)
		id := co.submit(t, "kind: mpi\nname: toobig\ncommand: [python, allreduce.py]\nreplicas: 4\n"+
			"resources: {cpu: \"32\", memory: 256Gi, accelerators: {type: A100, count: 8}}\n")
		j, _ := co.waitJob(t, id, "fails", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Contains(t, j.Reason, "exceeded quota")
		assert.Equal(t, state.MaxUnstartedRequeues, j.LostUnstarted, "requeued as often as a job lost before it started may be")
		require.Eventually(t, func() bool { return len(pods(t, c, id)) == 0 }, 30*time.Second, 50*time.Millisecond, "the created Pods are deleted")
		seen := map[string]bool{}
		for _, p := range pw.drain() {
			if p.Labels["atom.io/job"] != kube.LabelValue(string(id)) {
				continue
			}
			seen[p.Name] = true
			assert.Empty(t, p.Spec.NodeName, "pod %s was bound: part of a gang ran", p.Name)
		}
		assert.Len(t, seen, 3, "three Pods of the first attempt were created, none after")
	})

	t.Run("preemption", func(t *testing.T) {
		low := co.submit(t, "kind: command\nname: sweep\npriority: low\ncommand: [sleep, inf]\nreplicas: 4\n"+
			"resources: {accelerators: {type: A100, count: 8}}\n")
		_, lowTasks := co.waitJob(t, low, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		lowNodes := map[string]bool{}
		for _, p := range pods(t, c, low) {
			assert.Equal(t, "atom-low", p.Spec.PriorityClassName)
			lowNodes[p.Spec.NodeName] = true
		}
		require.Len(t, lowNodes, 4)

		normal := co.submit(t, "kind: command\nname: train\ncommand: [python, train.py]\nreplicas: 2\n"+
			"resources: {accelerators: {type: A100, count: 8}}\n")
		_, tasks := co.waitJob(t, normal, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		for _, task := range lowTasks {
			_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(task.ID), metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "low pod %s deleted: %v", task.ID, err)
		}
		got := pods(t, c, normal)
		require.Len(t, got, 2)
		for _, p := range got {
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			assert.Equal(t, "atom-normal", p.Spec.PriorityClassName)
			assert.True(t, lowNodes[p.Spec.NodeName], "bound to a node the low job held: %s", p.Spec.NodeName)
		}
		assert.Len(t, running(tasks), 2)
		j, _ := co.waitJob(t, low, "is requeued", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobPending })
		assert.Equal(t, structs.ReasonPreempted, j.Reason)
		assert.Equal(t, 1, j.Preemptions)
	})
}

// finish makes the task container of Pod name exit with code, as a
// kubelet reports it.
func finish(t *testing.T, c *k8stest.Cluster, name string, code int32) {
	t.Helper()
	ctx := context.Background()
	p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	started := now
	if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
		started = p.Status.ContainerStatuses[0].State.Running.StartedAt
	}
	p.Status.Phase = phase
	p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady || c.Type == corev1.ContainersReady })
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, Image: p.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now}}}}
	_, err = c.Admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}
