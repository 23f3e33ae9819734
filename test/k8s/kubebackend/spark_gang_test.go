package kubebackend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// sparkExec is sparkSpec with executors of 4 cores and 8 GiB plus 1 GiB
// overhead sized by exec ("instances: 2, ", or "" with a
// dynamicAllocation section in extra).
func sparkExec(name, priority, exec, extra string) string {
	return "kind: spark\nname: " + name + "\npriority: " + priority + "\nimage: atom/spark:test\n" +
		"resources: {cpu: \"2\", memory: 4Gi}\n" +
		"spark:\n  mainApplicationFile: local:///opt/spark/jobs/clean.py\n" +
		"  executor: {" + exec + "cores: 4, memory: 8Gi, memoryOverhead: 1Gi}\n" + extra
}

// noMinimum is a dynamicAllocation section with no minimum executors:
// the driver is placed alone and every executor comes when its Pod does.
const noMinimum = "  dynamicAllocation: {minExecutors: 0, maxExecutors: 4}\n"

// TestSparkFiveJobsTwoFit: five spark jobs, each a 2-CPU driver and 2
// executors of 4 CPUs (placed with it as one gang), on two 12-CPU kwok
// nodes, where two fit: the first two start, the other three wait with
// no Pod at all, though a driver alone would fit (the Spark Operator
// deadlock: every driver started, no executor room left). Spark's
// executor Pods, made by hand as its driver would, bind into the room
// held for them, late ones too; as jobs end the next starts, in order,
// and all five finish.
func TestSparkFiveJobsTwoFit(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "12", Memory: "64Gi"}, k8stest.NodeSpec{Name: "cpu-2", CPU: "12", Memory: "64Gi"})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx := context.Background()

	ids := make([]structs.JobID, 5)
	for i := range ids {
		ids[i] = co.submit(t, sparkExec(fmt.Sprintf("sp-%d", i+1), "normal", "instances: 2, ", ""))
	}
	state := func(id structs.JobID) structs.JobState {
		st, err := co.Job(ctx, id)
		require.NoError(t, err)
		return st.Job.State
	}
	// waitRuns waits until job i runs its driver on node, and checks that
	// the jobs of waiting wait whole: no Pod, and why says so.
	waitRuns := func(i int, node string, waiting ...int) {
		t.Helper()
		co.waitJob(t, ids[i], "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		if node != "" {
			assert.Equal(t, node, driverPod(t, c, ids[i]).Spec.NodeName, "job %d's driver", i+1)
		}
		for _, w := range waiting {
			require.Eventually(t, func() bool {
				why, err := co.Why(ctx, ids[w])
				// Until the scheduler's first cycle after its submission
				// the job's why says it has not been looked at yet.
				return err == nil && why.State == structs.JobPending && why.Message != "" &&
					!strings.Contains(why.Message, "has not looked at this job yet")
			}, 30*time.Second, 50*time.Millisecond)
			why, err := co.Why(ctx, ids[w])
			require.NoError(t, err)
			assert.Contains(t, why.Message, "driver + 2 executors need cpu=2 memory=4Gi + 2 × cpu=4 memory=9Gi at once, in one pool of one cluster: ", "job %d", w+1)
			assert.Empty(t, pods(t, c, ids[w]), "job %d waits whole: no Pod", w+1)
		}
	}
	// bind has Spark's driver of job i ask for its 2 executors; they are
	// bound to node, where their room was held.
	bind := func(i int, node string) {
		t.Helper()
		d := driverPod(t, c, ids[i])
		for k := 1; k <= 2; k++ {
			executor(t, c, ids[i], d, fmt.Sprintf("sp-%d-exec-%d", i+1, k))
		}
		_, tasks := co.waitJob(t, ids[i], "runs its 2 executors", func(_ *structs.Job, ts []*structs.Task) bool {
			n := 0
			for _, x := range executorTasks(ts) {
				if x.State == structs.TaskRunning {
					n++
				}
			}
			return n == 2
		})
		xs := executorTasks(tasks)
		require.Len(t, xs, 2)
		for _, x := range xs {
			if node != "" {
				assert.Equal(t, structs.NodeID(node), x.Node, "job %d's executor %s", i+1, x.Executor)
			}
			assert.Equal(t, string(x.Node), boundTo(t, c, x.Executor), "bound where the state placed it")
		}
	}
	// end has job i's driver exit 0: the job succeeds, its executor Pods
	// are deleted.
	end := func(i int) {
		t.Helper()
		finish(t, c, driverPod(t, c, ids[i]).Name, 0)
		co.waitJob(t, ids[i], "succeeds", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobSucceeded })
		require.Eventually(t, func() bool { return len(executors(t, c, ids[i])) == 0 }, 30*time.Second, 50*time.Millisecond,
			"job %d's executor Pods are deleted", i+1)
	}

	// The first two: sp-2's driver takes the 2 CPUs left on cpu-1 (best
	// fit), its executors' room is on cpu-2. sp-3's driver would fit on
	// cpu-2 beside that room; its executors would not.
	waitRuns(0, "cpu-1")
	waitRuns(1, "cpu-1", 2, 3, 4)
	bind(0, "cpu-1")
	// From here where the next job goes depends on which of the ended
	// job's Pods are gone first (sp-1's driver or its executors, all on
	// cpu-1, say): its driver and both executors' room in one decision
	// either way, the room maybe on both nodes.
	end(0)
	waitRuns(2, "", 3, 4)
	bind(1, "cpu-2") // late: its room waited for it, untaken
	bind(2, "")
	end(1)
	waitRuns(3, "", 4)
	bind(3, "")
	end(2)
	waitRuns(4, "")
	bind(4, "")
	end(3)
	end(4)
	for i, id := range ids {
		assert.Equal(t, structs.JobSucceeded, state(id), "job %d", i+1)
	}
	q, err := co.Quota(ctx, "user:dev")
	require.NoError(t, err)
	assert.Empty(t, q.Usage)
	list, err := c.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	require.NoError(t, err)
	for _, p := range list.Items {
		assert.NotNil(t, p.DeletionTimestamp, "executor Pod %s is left", p.Name)
	}
}
