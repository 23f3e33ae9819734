package realnode_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// TestPreemption: a low-priority job holds the node's two GPUs; a normal
// job needing them makes the coordinator stop it: the kubelet's SIGTERM
// reaches the job through atom (PID 1), the job's trap says so in its log,
// which `job logs` still shows once its Pod has finished; the low job is
// requeued (Pending, Preempted), the normal job runs on the same node with
// the same GPUs, and once it is cancelled the low job runs again.
func TestPreemption(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{Node: k8stest.RealNodeOptions{GPUs: 2}})
	e.KubeletLogOnFailure(t)
	ctx := context.Background()

	low := e.Submit(t, `kind: command
name: low
priority: low
resources: {accelerators: {type: A100, count: 2}}
command: [sh, -c, 'trap "echo got SIGTERM; exit 0" TERM; echo "low on GPUs $ATOM_ACCELERATORS"; sleep 1000 & wait $!']
`)
	_, tasks := e.WaitJob(t, low, "runs", nodetest.Running)
	require.Len(t, tasks, 1)
	lowTask := tasks[0]
	require.Len(t, lowTask.Accels.Indices(), 2)
	// Its trap is set once it has said where it runs.
	require.Eventually(t, func() bool {
		out, err := e.Run("job", "logs", string(low))
		return err == nil && strings.Contains(out, "low on GPUs ")
	}, 30*time.Second, 100*time.Millisecond, "the low job starts")

	start := time.Now()
	normal := e.Submit(t, `kind: command
name: normal
resources: {accelerators: {type: A100, count: 2}}
command: [sh, -c, 'echo "normal on GPUs $ATOM_ACCELERATORS"; sleep 1000']
`)
	ended, _ := waitTaskEnded(t, e, low, lowTask.ID)
	stopped := time.Since(start)
	e.WaitJob(t, normal, "runs", nodetest.Running)
	running := time.Since(start)
	t.Logf("low job's task ended %.1fs after the normal job's submission (%s exit %d: %s); normal job running after %.1fs",
		stopped.Seconds(), ended.State, ended.ExitCode, ended.Message, running.Seconds())

	// The low job was stopped, not failed: it exited 0 from its trap,
	// within the grace, and is requeued.
	assert.Equal(t, structs.StopPreempted, ended.StopReason)
	assert.Equal(t, structs.TaskStopped, ended.State, "stopped, not failed")
	assert.Zero(t, ended.ExitCode, "the job's trap exits 0")
	js, err := e.Job(ctx, low)
	require.NoError(t, err)
	assert.Equal(t, structs.JobPending, js.Job.State)
	assert.Equal(t, structs.ReasonPreempted, js.Job.Reason)
	assert.Equal(t, 1, js.Job.Attempt, "requeued as a new attempt")
	assert.Equal(t, 1, js.Job.Preemptions)
	st := e.CLI(t, "job", "status", string(low))
	t.Logf("low job:\n%s", st)
	assert.Contains(t, st, "Stopped: Preempted (exit 0)")
	assert.Contains(t, st, "State:      Pending: Preempted\n")
	why := e.CLI(t, "job", "why", string(low))
	t.Logf("low job why: %s", why)
	assert.Contains(t, why, "does not fit now", "it waits for the GPUs the normal job holds")

	// Its Pod has finished and is kept: job logs shows the trap's line.
	p, err := e.Pod(t, lowTask.ID)
	require.NoError(t, err, "the preempted task's finished Pod is kept for its log")
	assert.Equal(t, corev1.PodFailed, p.Status.Phase)
	assert.Equal(t, "DeadlineExceeded", p.Status.Reason, "stopped in place by its kubelet")
	assert.Nil(t, p.DeletionTimestamp)
	out := e.CLI(t, "job", "logs", "--all", string(low)) // the preempted attempt's task too
	t.Logf("low job logs:\n%s", out)
	var idx []string
	for _, i := range lowTask.Accels.Indices() {
		idx = append(idx, strconv.Itoa(i))
	}
	gpus := strings.Join(idx, ",") // ATOM_ACCELERATORS: the node's indices
	assert.Contains(t, out, "low on GPUs "+gpus+"\n")
	assert.Contains(t, out, "got SIGTERM\n")

	// The normal job runs where the low one ran, on the same GPUs.
	_, ntasks := e.WaitJob(t, normal, "runs", nodetest.Running)
	require.Len(t, ntasks, 1)
	assert.Equal(t, lowTask.Node, ntasks[0].Node)
	assert.Equal(t, lowTask.Accels.Indices(), ntasks[0].Accels.Indices())
	np, err := e.Pod(t, ntasks[0].ID)
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, np.Status.Phase)
	assert.Equal(t, e.Node.Name, np.Spec.NodeName)
	require.Eventually(t, func() bool {
		out, err := e.Run("job", "logs", string(normal))
		return err == nil && strings.Contains(out, "normal on GPUs "+gpus+"\n")
	}, 30*time.Second, 100*time.Millisecond, "the normal job runs")

	// Requeued, the low job runs again once the normal job is gone.
	e.CLI(t, "job", "cancel", string(normal))
	var again *structs.Task
	e.WaitJob(t, low, "runs again", func(j *structs.Job, tasks []*structs.Task) bool {
		for _, x := range tasks {
			if x.Attempt == j.Attempt && x.State == structs.TaskRunning {
				again = x
			}
		}
		return j.State == structs.JobRunning && again != nil
	})
	assert.Equal(t, 1, again.Attempt)
	assert.Equal(t, lowTask.Accels.Indices(), again.Accels.Indices())
	t.Logf("low job running again as %s %.1fs after the normal job's submission", again.ID, time.Since(start).Seconds())
}
