package kubebackend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestSparkExecutorPreempts: low jobs fill both nodes; the executor Pod of
// a normal spark job fits nowhere, so it preempts the low job whose loss
// is least (fill-1, 14 CPUs, not fill-2, 16): fill-1's Pod is deleted, the
// executor is bound to the room it freed, and fill-1 is Pending again,
// waiting (the room is the executor's). fill-2 is untouched.
func TestSparkExecutorPreempts(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "16", Memory: "64Gi"}, k8stest.NodeSpec{Name: "cpu-2", CPU: "16", Memory: "64Gi"})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx := context.Background()

	// No minimum executors: none is placed with the driver, each comes
	// with its Pod (those of a minimum take the room held with it).
	id := co.submit(t, sparkExec("etl", "normal", "", noMinimum)+"nodeName: cpu-1\n")
	co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	d := driverPod(t, c, id)
	require.Equal(t, "cpu-1", d.Spec.NodeName)
	fill := func(name, cpu, node string) structs.JobID {
		f := co.submit(t, fmt.Sprintf("kind: command\nname: %s\npriority: low\ncommand: [sleep, inf]\nnodeName: %s\nresources: {cpu: %q, memory: 8Gi}\n", name, node, cpu))
		co.waitJob(t, f, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		return f
	}
	f1, f2 := fill("fill-1", "14", "cpu-1"), fill("fill-2", "16", "cpu-2")
	p1 := pods(t, c, f1)
	require.Len(t, p1, 1)

	executor(t, c, id, d, "etl-exec-1")
	gone(t, c, p1[0].Name, "the low job preempted for the executor")
	assert.Equal(t, "cpu-1", boundTo(t, c, "etl-exec-1"), "bound to the room its victim freed")
	co.waitJob(t, id, "runs its executor", func(_ *structs.Job, ts []*structs.Task) bool {
		x := executorTasks(ts)
		return len(x) == 1 && x[0].State == structs.TaskRunning && x[0].Node == "cpu-1"
	})
	j, _ := co.waitJob(t, f1, "is Pending again", func(j *structs.Job, _ []*structs.Task) bool {
		return j.State == structs.JobPending && j.Attempt == 1
	})
	assert.Equal(t, 1, j.Preemptions)
	evs, err := c.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=etl-exec-1,reason=FailedScheduling"})
	require.NoError(t, err)
	require.NotEmpty(t, evs.Items, "it said why it waited")
	assert.Contains(t, evs.Items[0].Message, "executor waits for room: low-priority jobs "+string(f1)+" on node cpu-1 are being stopped to make room for it")

	j2, tasks := co.waitJob(t, f2, "still runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	assert.Zero(t, j2.Preemptions)
	assert.Len(t, running(tasks), 1)
	// fill-1 (14 CPUs) waits: 10 are left on cpu-1 beside the driver and
	// the executor.
	_, tasks = co.waitJob(t, f1, "waits", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobPending })
	for _, x := range tasks {
		assert.False(t, x.State.HoldsResources() && x.Attempt == 1, "fill-1 was placed again: %+v", x)
	}
}
