package realnode_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// TestCommandJob: a command job in a real container, atom its PID 1: its
// exit code is the container's and the task's, `job logs` (with and
// without -f) is the container's log, a finished Pod's log is kept a
// while and then said to be gone.
func TestCommandJob(t *testing.T) {
	keep := 8 * time.Second
	e := nodetest.Start(t, nodetest.Options{KeepFinished: keep})
	e.KubeletLogOnFailure(t)
	ctx := context.Background()

	t.Run("exit-3", func(t *testing.T) {
		id := e.Submit(t, `kind: command
name: hello
command: [sh, -c, 'echo "pid 1: $(tr "\0" " " </proc/1/cmdline)"; for i in 1 2 3; do echo line $i; done; echo to-stderr >&2; exit 3']
resources: {cpu: 250m, memory: 128Mi}
`)
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		require.Len(t, tasks, 1)
		assert.Equal(t, structs.JobFailed, j.State, j.Reason)
		assert.Equal(t, structs.TaskFailed, tasks[0].State)
		assert.Equal(t, 3, tasks[0].ExitCode)

		// atom reports the exit just before it exits: the Pod follows.
		var p *corev1.Pod
		require.Eventually(t, func() bool {
			var err error
			p, err = e.Pod(t, tasks[0].ID)
			require.NoError(t, err, "the finished Pod is kept for its log")
			return p.Status.Phase == corev1.PodFailed
		}, 30*time.Second, 100*time.Millisecond, "the Pod ends Failed")
		require.Len(t, p.Status.ContainerStatuses, 1)
		require.NotNil(t, p.Status.ContainerStatuses[0].State.Terminated)
		assert.Equal(t, int32(3), p.Status.ContainerStatuses[0].State.Terminated.ExitCode, "atom's exit code is the container's")

		rc, err := e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: kube.ContainerName}).Stream(ctx)
		require.NoError(t, err)
		kubelog, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		t.Logf("container log:\n%s", kubelog)
		assert.Contains(t, string(kubelog), "pid 1: /app/atom run ", "atom is the container's PID 1")
		// stdout and stderr are two pipes: their lines interleave as the
		// kubelet reads them, each stream's in its own order.
		var stdout []string
		for _, l := range strings.Split(string(kubelog), "\n") {
			if strings.HasPrefix(l, "line ") {
				stdout = append(stdout, l)
			}
		}
		assert.Equal(t, []string{"line 1", "line 2", "line 3"}, stdout)
		assert.Contains(t, string(kubelog), "to-stderr\n")

		out := e.CLI(t, "job", "logs", string(id))
		assert.Equal(t, string(kubelog), out, "job logs shows the container's log")
	})

	t.Run("follow", func(t *testing.T) {
		id := e.Submit(t, `kind: command
name: slow
command: [sh, -c, 'echo first; sleep 2; echo second']
resources: {cpu: 250m, memory: 128Mi}
`)
		// Right after submit: waits for the Pod, streams until the end.
		out := e.CLI(t, "job", "logs", "-f", string(id))
		assert.True(t, strings.HasSuffix(out, "first\nsecond\n"), "job logs -f streams the whole log: %q", out)
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		assert.Equal(t, structs.JobSucceeded, j.State, j.Reason)
		if p, err := e.Pod(t, tasks[0].ID); err == nil {
			t.Logf("pod created %s, scheduled %s, conditions %+v, containers %+v", p.CreationTimestamp, tasks[0].ScheduledAt, p.Status.Conditions, p.Status.ContainerStatuses)
		}
	})

	t.Run("gone", func(t *testing.T) {
		id := e.Submit(t, "kind: command\nname: brief\ncommand: [sh, -c, 'echo brief']\nresources: {cpu: 250m, memory: 128Mi}\n")
		_, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		assert.Contains(t, e.CLI(t, "job", "logs", string(id)), "brief\n")
		require.Eventually(t, func() bool {
			_, err := e.Pod(t, tasks[0].ID)
			return apierrors.IsNotFound(err)
		}, keep+30*time.Second, 200*time.Millisecond, "the finished Pod is deleted once kept %s", keep)
		out := e.CLI(t, "job", "logs", string(id))
		assert.Equal(t, "(no output kept: Pod "+nodetest.Namespace+"/"+kube.PodName(tasks[0].ID)+
			": its Pod is gone, and with it the container log the kubelet kept: the cluster's log shipping has it (deploy/vector.yaml ships every task's output))\n", out)
	})
}

// TestGPUPreflight: on a node with GPUs (fake: no devices, so atom checks
// them in its simulated mode, against the allocation), atom tells the job
// which GPUs it has; a GPU atom's preflight finds at fault fails the task
// with exit 3 before the job runs, and the GPU is quarantined.
func TestGPUPreflight(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{Node: k8stest.RealNodeOptions{GPUs: 4}, SimulatedGPUFaults: "3:ecc"})
	e.KubeletLogOnFailure(t)
	// atom checks the allocated GPUs (simulated: the node's are
	// fake) and tells the job which they are.
	id := e.Submit(t, `kind: command
name: gpus
command: [sh, -c, 'echo "accelerators=$ATOM_ACCELERATORS"; /app/atom gpus']
resources: {accelerators: {type: A100, count: 2}}
`)
	j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
	require.Equal(t, structs.JobSucceeded, j.State, j.Reason)
	out := e.CLI(t, "job", "logs", string(id))
	t.Logf("gpus job:\n%s", out)
	idx := tasks[0].Accels.Indices()
	assert.Len(t, idx, 2)
	assert.NotContains(t, idx, 3)

	// All four: atom's preflight finds GPU 3's fault, the task
	// fails with exit 3 saying so, and GPU 3 is quarantined.
	id = e.Submit(t, `kind: command
name: all-gpus
command: [sh, -c, 'echo should not run']
resources: {accelerators: {type: A100, count: 4}}
`)
	j, tasks = e.WaitJob(t, id, "fails its preflight", func(j *structs.Job, tasks []*structs.Task) bool {
		return len(tasks) > 0 && !tasks[0].State.HoldsResources()
	})
	t.Logf("job %s: %s; task %s exit %d: %s", id, j.State, tasks[0].State, tasks[0].ExitCode, tasks[0].Message)
	assert.Equal(t, 3, tasks[0].ExitCode)
	assert.Contains(t, tasks[0].Message, "PreflightFailed")
	assert.NotContains(t, e.CLI(t, "job", "logs", string(id)), "should not run")
	nodes, err := e.Nodes(context.Background())
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Len(t, nodes[0].Quarantined, 1, "GPU 3 is quarantined")
	assert.Equal(t, 3, nodes[0].Quarantined[0].Accel)
}
