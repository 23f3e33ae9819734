package realnode_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
	"github.com/atom-sched/atom/test/spark/lidar"
)

// squaresJob is a spark job whose driver (1 CPU) and two executors of
// 500m fill the node's 2 CPUs: one such job runs at a time.
const squaresJob = `kind: spark
name: %s
priority: %s
resources: {cpu: 1, memory: 1536Mi}
configs: [{configMap: spark-programs, mountPath: /jobs}]
spark:
  mainApplicationFile: local:///jobs/squares.py
  arguments: [%s]
  executor: {instances: 2, cores: 1, coreRequest: 500m, memory: 512Mi}
  sparkConf: {spark.ui.enabled: "false"}
`

// TestSparkJob: spark jobs on the real node with the spark image. The
// driver runs spark-submit in client mode in its task Pod against the API
// server (at the kubernetes Service, as the job's service account); the
// executor Pods Spark asks for name atom as their scheduler, owned by the
// driver's Pod, and the coordinator binds them within the job's charge;
// the job's output is in `job logs`.
func TestSparkJob(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{Images: []string{"spark"}})
	e.KubeletLogOnFailure(t)
	e.SparkDriverRBAC(t)
	e.FilesConfigMap(t, "spark-programs", "testdata/squares.py")
	ctx := context.Background()
	require.NoError(t, nodetest.MakeLidarPrograms(ctx, e.Cluster))

	// Two jobs, each of which fills the node with its driver and
	// executors: they run one after the other, neither holding a driver
	// that waits for executors that cannot come, and each gets its two
	// executors.
	t.Run("executors", func(t *testing.T) {
		start := time.Now()
		type run struct {
			id    structs.JobID
			watch *nodetest.ExecutorWatch
		}
		var runs []run
		for _, name := range []string{"squares-a", "squares-b"} {
			id := e.Submit(t, fmt.Sprintf(squaresJob, name, "normal", `"1000000"`))
			runs = append(runs, run{id, nodetest.WatchExecutors(ctx, e.Client, id)})
		}
		// Executor Pods as the API server has them, while they run.
		seen := map[string]corev1.Pod{}
		require.Eventually(t, func() bool {
			for _, r := range runs {
				for _, p := range e.ExecutorPods(t, string(r.id)) {
					if p.Spec.NodeName != "" {
						seen[p.Name] = p
					}
				}
			}
			// Both jobs from one read of the coordinator's state (each
			// watch polls on its own, so two watches may disagree).
			jobs, err := e.Client.ListJobs(ctx, client.JobFilter{})
			if !assert.NoError(t, err) {
				return false
			}
			var holding []string
			for _, j := range jobs {
				if (j.ID == runs[0].id || j.ID == runs[1].id) && (j.State == structs.JobScheduled || j.State == structs.JobRunning) {
					holding = append(holding, string(j.ID))
				}
			}
			assert.LessOrEqual(t, len(holding), 1, "one job at a time holds the node: %v", holding)
			for _, r := range runs {
				select {
				case <-r.watch.Done():
				default:
					return false
				}
			}
			return true
		}, 3*time.Minute, 200*time.Millisecond, "the jobs end")
		for _, r := range runs {
			j, tasks, err := r.watch.Wait()
			require.NoError(t, err)
			out := e.CLI(t, "job", "logs", string(r.id))
			require.Equal(t, structs.JobSucceeded, j.State, "%s: %s\n%s\n%s", r.id, j.Reason, describeTasks(tasks), out)
			assert.Contains(t, out, "squares: the sum of the squares below 1000000 is 333332833333500000\n")
			pods := r.watch.Pods()
			assert.Len(t, pods, 2, "two executors: %v", pods)
			assert.Equal(t, 2, r.watch.Peak())
			var names []string
			for _, x := range tasks[1:] {
				require.NotEmpty(t, x.Executor, "the driver, then its executors: %s", describeTasks(tasks))
				assert.Equal(t, string(e.Node.Name), string(x.Node))
				assert.Equal(t, structs.Resources{MilliCPU: 500, Memory: 896 << 20}, x.Resources, "an executor holds what its Pod asks")
				assert.False(t, x.State.HoldsResources(), "%s ended with the job", x.ID)
				names = append(names, x.Executor)
				p, ok := seen[x.Executor]
				require.True(t, ok, "executor Pod %s was seen bound", x.Executor)
				assert.Equal(t, kube.DefaultSchedulerName, p.Spec.SchedulerName)
				assert.Equal(t, e.Node.Name, p.Spec.NodeName)
				require.Len(t, p.OwnerReferences, 1)
				assert.Equal(t, kube.PodName(tasks[0].ID), p.OwnerReferences[0].Name, "the driver's Pod owns its executors")
			}
			sort.Strings(names)
			ran := regexp.MustCompile(`squares: tasks ran on (.*)\n`).FindStringSubmatch(out)
			require.NotNil(t, ran, out)
			for _, h := range strings.Fields(ran[1]) {
				assert.Contains(t, names, h, "Python workers ran in the executors' Pods")
			}
			assert.Eventually(t, func() bool { return len(e.ExecutorPods(t, string(r.id))) == 0 }, 30*time.Second, 200*time.Millisecond,
				"no executor Pod outlives the job")
			t.Logf("job %s: %s at %.1fs; executors %s", r.id, j.State, time.Since(start).Seconds(), strings.Join(names, ", "))
		}
	})

	// The seed's LiDAR clean with dynamic allocation: executors rise to
	// the most allowed while there is work and fall back to none once
	// idle (shuffle tracking: no external shuffle service); the cleaned
	// points, written by the executors to the job's volume, are exactly
	// those the input keeps.
	t.Run("lidar", func(t *testing.T) {
		dir := t.TempDir()
		start := time.Now()
		want, err := lidar.WritePoints(filepath.Join(dir, "points"), 3_000_000, 4)
		require.NoError(t, err)
		t.Logf("wrote 3,000,000 points in %.1fs, %d to keep", time.Since(start).Seconds(), want.Points)
		e.HostPathClaim(t, "lidar", dir)
		id := e.Submit(t, nodetest.LidarJob("lidar", "lidar", 0, 2, 30, true))
		w := nodetest.WatchExecutors(ctx, e.Client, id)
		j, tasks, err := w.Wait()
		require.NoError(t, err)
		out := e.CLI(t, "job", "logs", string(id))
		require.Equal(t, structs.JobSucceeded, j.State, "%s\n%s\n%s", j.Reason, describeTasks(tasks), out)
		assert.Contains(t, out, fmt.Sprintf("lidar: kept %d points in /data/cleaned", want.Points))
		got, err := lidar.ReadCleaned(filepath.Join(dir, "cleaned"))
		require.NoError(t, err)
		assert.Equal(t, want, got, "the points kept, and only they")
		assert.Equal(t, 2, w.Peak(), "executors rose to maxExecutors")
		assert.True(t, w.FellBack(), "the driver ran on with fewer executors")
		assert.Regexp(t, `lidar: idle [0-9.]+ s with 0 executors\n`, out, "idle, every executor let go")
		t.Logf("lidar: %.1fs, %d executors at most, %.1f executor-seconds", time.Since(start).Seconds(), w.Peak(), w.ExecutorSeconds())
	})

	// A low-priority job's driver and executors make way for a normal
	// job that needs the node: every Pod of its attempt ends, and it runs
	// again once there is room. Cancelled, it leaves no Pod running.
	t.Run("preemption and cancel", func(t *testing.T) {
		low := e.Submit(t, fmt.Sprintf(squaresJob, "spare", "low", `"8", "600"`))
		// Its attempt's driver and both executors run.
		full := func(attempt int) func(*structs.Job, []*structs.Task) bool {
			return func(j *structs.Job, tasks []*structs.Task) bool {
				cur := ofAttempt(tasks, attempt)
				return j.Attempt == attempt && nodetest.Running(j, cur) && len(cur) == 3
			}
		}
		_, tasks := e.WaitJob(t, low, "runs its driver and both executors", full(0))
		driver, executors := podsOf(ofAttempt(tasks, 0))
		require.Len(t, executors, 2)
		urgent := e.Submit(t, "kind: command\nname: urgent\nresources: {cpu: 1, memory: 256Mi}\ncommand: [sh, -c, 'echo urgent ran']\n")
		waitPodsEnded(t, e, driver, executors)
		j, _ := e.WaitJob(t, urgent, "ends", nodetest.Ended)
		assert.Equal(t, structs.JobSucceeded, j.State, j.Reason)

		j, tasks = e.WaitJob(t, low, "runs its next attempt, driver and executors", full(1))
		assert.Equal(t, 1, j.Preemptions, "the low job was preempted once")
		driver, executors = podsOf(ofAttempt(tasks, 1))
		require.Len(t, executors, 2)
		e.CLI(t, "job", "cancel", string(low))
		j, _ = e.WaitJob(t, low, "ends", nodetest.Ended)
		assert.Equal(t, structs.JobCancelled, j.State)
		waitPodsEnded(t, e, driver, executors)
	})
}

// ofAttempt is those of tasks of attempt.
func ofAttempt(tasks []*structs.Task, attempt int) []*structs.Task {
	var out []*structs.Task
	for _, x := range tasks {
		if x.Attempt == attempt {
			out = append(out, x)
		}
	}
	return out
}

// podsOf names the Pods of tasks: the driver's and its executors'.
func podsOf(tasks []*structs.Task) (driver string, executors []string) {
	for _, x := range tasks {
		if x.Executor != "" {
			executors = append(executors, x.Executor)
		} else {
			driver = kube.PodName(x.ID)
		}
	}
	return driver, executors
}

// waitPodsEnded waits until the driver's Pod has ended (kept a while for
// its log, or deleted) and every executor Pod is deleted.
func waitPodsEnded(t *testing.T, e *nodetest.Env, driver string, executors []string) {
	t.Helper()
	pods := e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace)
	require.Eventually(t, func() bool {
		for _, p := range executors {
			if _, err := pods.Get(context.Background(), p, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		p, err := pods.Get(context.Background(), driver, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded))
	}, time.Minute, 200*time.Millisecond, "driver Pod %s ends, executor Pods %v are deleted", driver, executors)
}

func describeTasks(ts []*structs.Task) string {
	var b strings.Builder
	for _, x := range ts {
		fmt.Fprintf(&b, "%s %s node %s executor %q %s\n", x.ID, x.State, x.Node, x.Executor, x.Message)
	}
	return b.String()
}
