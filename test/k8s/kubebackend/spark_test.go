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

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// sparkSpec is the two-node case's job: a 2-CPU driver and 4 executors of 4
// cores and 8 GiB plus 1 GiB overhead.
func sparkSpec(name, priority string) string {
	return "kind: spark\nname: " + name + "\npriority: " + priority + "\nimage: atom/spark:test\n" +
		"resources: {cpu: \"2\", memory: 4Gi}\n" +
		"spark:\n  mainApplicationFile: local:///opt/spark/jobs/clean.py\n" +
		"  executor: {instances: 4, cores: 4, memory: 8Gi, memoryOverhead: 1Gi}\n"
}

// driverPod is job id's driver Pod (its replica 0's, atom's own).
func driverPod(t *testing.T, c *k8stest.Cluster, id structs.JobID) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	require.Eventually(t, func() bool {
		list, err := c.Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
			LabelSelector: "atom.io/managed-by=atom,atom.io/job=" + string(id)})
		if err != nil || len(list.Items) != 1 || list.Items[0].Status.Phase != corev1.PodRunning {
			return false
		}
		p = &list.Items[0]
		return true
	}, 30*time.Second, 50*time.Millisecond, "job %s's driver Pod runs", id)
	return p
}

// executor creates an executor Pod of job as Spark's driver in driver
// would (Spark's KubernetesExecutorBuilder): atom's scheduler, the
// driver Pod as controlling owner, Spark's labels and atom's job label
// (spark.kubernetes.executor.label.atom.io/job), requests of 4 CPUs and 9
// GiB (memory + memoryOverhead, also the limit).
func executor(t *testing.T, c *k8stest.Cluster, job structs.JobID, driver *corev1.Pod, name string) *corev1.Pod {
	t.Helper()
	return executorOf(t, c, job, driver, name, "4")
}

// executorOf is executor asking for cpu CPUs.
func executorOf(t *testing.T, c *k8stest.Cluster, job structs.JobID, driver *corev1.Pod, name, cpu string) *corev1.Pod {
	t.Helper()
	mem := resource.MustParse("9Gi")
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"spark-app-selector": "spark-" + string(job), "spark-role": "executor",
				"spark-exec-id": name, "atom.io/job": string(job)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID,
				Controller: new(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "atom", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "atom/spark:test", Args: []string{"executor"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem}}}}},
	}
	p, err := c.Admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
	return p
}

// executors lists the executor Pods of job that exist and are not being
// deleted.
func executors(t *testing.T, c *k8stest.Cluster, job structs.JobID) []corev1.Pod {
	t.Helper()
	list, err := c.Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "spark-role=executor,atom.io/job=" + string(job)})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// gone waits until Pod name no longer exists.
func gone(t *testing.T, c *k8stest.Cluster, name, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := c.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 50*time.Millisecond, "pod %s is deleted: %s", name, what)
}

// executorTasks is the job's executor tasks that hold resources.
func executorTasks(tasks []*structs.Task) []*structs.Task {
	var out []*structs.Task
	for _, x := range tasks {
		if x.Executor != "" && x.State.HoldsResources() {
			out = append(out, x)
		}
	}
	return out
}

// TestSparkExecutors plays Spark's driver against a coordinator on a real
// API server with two 64-CPU kwok nodes: executor Pods are
// bound through the Binding API within their job's charge and executor
// limit, and deleted by atom with their driver (the test API server runs
// no garbage collector: in a real cluster the owner reference would too).
func TestSparkExecutors(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "64", Memory: "256Gi"}, k8stest.NodeSpec{Name: "cpu-2", CPU: "64", Memory: "256Gi"})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx := context.Background()
	usage := func() structs.ResourceList {
		q, err := co.Quota(ctx, "user:dev")
		require.NoError(t, err)
		return q.Usage
	}

	t.Run("bound-within-limit", func(t *testing.T) {
		pw := watchPods(t, c)
		id := co.submit(t, sparkSpec("clean", "normal"))
		co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		// Charged for the driver and its most executors: 2 + 4 × 4 CPUs,
		// 4 + 4 × 9 GiB.
		charged := structs.ResourceList{structs.KeyCPU: 18000, structs.KeyMemory: 40 << 30}
		assert.Equal(t, charged, usage())
		d := driverPod(t, c, id)
		// The driver asks the API server for executors with its Pod's
		// token of the job's service account (Spark's client mode, in
		// cluster): mounted where Spark's Kubernetes client finds it.
		assert.Equal(t, structs.DefaultSparkServiceAccount, d.Spec.ServiceAccountName)
		require.NotNil(t, d.Spec.AutomountServiceAccountToken)
		assert.True(t, *d.Spec.AutomountServiceAccountToken)
		assert.True(t, slices.ContainsFunc(d.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
		}), "the API server mounts the service account's token: %+v", d.Spec.Containers[0].VolumeMounts)
		// One asking more than the job's executor (charged for 4 CPUs):
		// deleted, never bound.
		executorOf(t, c, id, d, "clean-exec-big", "5")
		gone(t, c, "clean-exec-big", "an executor asking 5 CPUs")
		for i := 1; i <= 4; i++ {
			executor(t, c, id, d, fmt.Sprintf("clean-exec-%d", i))
		}
		_, tasks := co.waitJob(t, id, "has 4 executors running", func(_ *structs.Job, ts []*structs.Task) bool {
			n := 0
			for _, x := range executorTasks(ts) {
				if x.State == structs.TaskRunning {
					n++
				}
			}
			return n == 4
		})
		for _, x := range executorTasks(tasks) {
			p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, x.Executor, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, string(x.Node), p.Spec.NodeName, "bound where the state placed it")
			assert.Equal(t, d.Spec.NodeName, p.Spec.NodeName, "best fit: the driver's node has the fewest free CPUs")
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			assert.Equal(t, structs.Resources{MilliCPU: 4000, Memory: 9 << 30}, x.Resources)
			assert.Equal(t, 0, x.Attempt)
		}
		assert.Equal(t, charged, usage(), "executors are within the job's charge")
		out := co.cli(t, "job", "status", string(id))
		assert.Contains(t, out, "Executors:  at most 4 of cpu=4 memory=9Gi (bound as the driver asks)")
		assert.Regexp(t, `clean-[a-z0-9]+-1-a0 +executor clean-exec-1 +1 +`+d.Spec.NodeName+` +Running +cpu=4 memory=9Gi`, out)

		// A fifth is beyond the job's most: deleted, never bound.
		executor(t, c, id, d, "clean-exec-5")
		gone(t, c, "clean-exec-5", "a fifth executor")
		_, tasks = co.waitJob(t, id, "still runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		assert.Len(t, executorTasks(tasks), 4)

		// The driver dies: every executor Pod is deleted and the
		// executors' resources and the job's quota are released.
		finish(t, c, d.Name, 137)
		j, _ := co.waitJob(t, id, "fails", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobFailed, j.State)
		require.Eventually(t, func() bool { return len(executors(t, c, id)) == 0 }, 30*time.Second, 50*time.Millisecond,
			"every executor Pod is deleted with the driver")
		_, tasks = co.waitJob(t, id, "holds nothing", func(_ *structs.Job, ts []*structs.Task) bool {
			for _, x := range ts {
				if x.State.HoldsResources() {
					return false
				}
			}
			return true
		})
		assert.Len(t, tasks, 5, "the driver and four executors")
		assert.Empty(t, usage())
		for _, p := range pw.drain() {
			if p.Name == "clean-exec-5" || p.Name == "clean-exec-big" {
				assert.Empty(t, p.Spec.NodeName, "executor %s was bound", p.Name)
			}
		}
	})

	t.Run("preempted-and-requeued", func(t *testing.T) {
		pw := watchPods(t, c)
		id := co.submit(t, sparkSpec("nightly", "low"))
		var old *corev1.Pod
		for cycle := range 3 {
			co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool {
				return j.State == structs.JobRunning && j.Attempt == cycle
			})
			d := driverPod(t, c, id)
			for i := 1; i <= 4; i++ {
				executor(t, c, id, d, fmt.Sprintf("nightly-a%d-exec-%d", cycle, i))
			}
			if old != nil {
				// Spark's driver of the attempt before asks late: that
				// Pod is deleted, never bound.
				executor(t, c, id, old, fmt.Sprintf("nightly-a%d-stale", cycle))
				gone(t, c, fmt.Sprintf("nightly-a%d-stale", cycle), "an executor of a driver that is gone")
			}
			_, tasks := co.waitJob(t, id, "has 4 executors bound", func(_ *structs.Job, ts []*structs.Task) bool {
				return len(executorTasks(ts)) == 4
			})
			require.Eventually(t, func() bool {
				live := executors(t, c, id)
				for _, p := range live {
					if p.Spec.NodeName == "" || p.OwnerReferences[0].UID != d.UID {
						return false
					}
				}
				return len(live) == 4
			}, 30*time.Second, 50*time.Millisecond, "the live executors are the current attempt's four, bound")
			for _, x := range executorTasks(tasks) {
				assert.Equal(t, cycle, x.Attempt)
			}
			// A normal job that needs the whole of the driver's node
			// preempts the job; it is requeued.
			n := co.submit(t, fmt.Sprintf("kind: command\nname: wide-%d\ncommand: [sleep, inf]\nnodeName: %s\nresources: {cpu: \"64\", memory: 1Gi}\n",
				cycle, d.Spec.NodeName))
			co.waitJob(t, n, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
			j, _ := co.waitJob(t, id, "is requeued", func(j *structs.Job, _ []*structs.Task) bool { return j.Attempt == cycle+1 })
			assert.Equal(t, cycle+1, j.Preemptions)
			require.Eventually(t, func() bool {
				for _, p := range executors(t, c, id) {
					if p.OwnerReferences[0].UID == d.UID {
						return false
					}
				}
				return true
			}, 30*time.Second, 50*time.Millisecond, "no executor of attempt %d is left", cycle)
			_, err := co.CancelJob(ctx, n)
			require.NoError(t, err)
			old = d
		}
		_, err := co.CancelJob(ctx, id)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(executors(t, c, id)) == 0 }, 30*time.Second, 50*time.Millisecond)
		for _, p := range pw.drain() {
			if p.Labels["spark-role"] == "executor" && p.Labels["atom.io/job"] == string(id) && p.Spec.NodeName != "" {
				assert.NotContains(t, p.Name, "stale", "an executor of an earlier attempt was bound")
			}
		}
	})

	t.Run("cancelled-at-once", func(t *testing.T) {
		before := usage()
		pw := watchPods(t, c)
		id := co.submit(t, sparkSpec("oops", "normal"))
		_, err := co.CancelJob(ctx, id)
		require.NoError(t, err)
		// Spark's driver, had it started, asks for an executor.
		fake := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "oops-driver", UID: "00000000-0000-0000-0000-000000000001"}}
		executor(t, c, id, fake, "oops-exec-1")
		gone(t, c, "oops-exec-1", "an executor of a cancelled job")
		j, tasks := co.waitJob(t, id, "is cancelled", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobCancelled })
		assert.Equal(t, structs.JobCancelled, j.State)
		assert.Empty(t, executorTasks(tasks))
		require.Eventually(t, func() bool { return len(pods(t, c, id)) == 0 }, 30*time.Second, 50*time.Millisecond, "no Pod of the job is left")
		assert.Equal(t, before, usage(), "usage unchanged")
		for _, p := range pw.drain() {
			if p.Name == "oops-exec-1" {
				assert.Empty(t, p.Spec.NodeName, "the executor of a cancelled job was bound")
			}
		}
	})
}
