package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// twoGPUNodes: two 4-GPU nodes of the local backend.
const twoGPUNodes = `clusters: [{name: local, backend: local}]
nodes:
  - {name: g1, cpu: "8", memory: 32Gi, accelerators: {type: A100, count: 4}}
  - {name: g2, cpu: "8", memory: 32Gi, accelerators: {type: A100, count: 4}}
quotas:
  - {scope: "user:dev", limits: {gpu/A100: 8}}
`

// TestDevServiceLosesOnlyTheReplicasNeeded: on one server with real Raft
// and the local backend, a low service of 8 one-GPU replicas (real
// processes) on two 4-GPU nodes meets a normal job asking 4 GPUs on one
// node: exactly the 4 replicas of one node stop; the other 4 processes
// run on untouched; the 4 replacements wait, saying why, while the
// normal job runs in the room they left; once it ends they run again.
func TestDevServiceLosesOnlyTheReplicasNeeded(t *testing.T) {
	cluster, err := structs.ParseClusterConfig([]byte(twoGPUNodes))
	require.NoError(t, err)
	d, dir := startDevWith(t, cluster)
	c := client.New(d.URL, adminToken)
	ctx := context.Background()
	submit := func(spec, req string) structs.JobID {
		var id structs.JobID
		require.Eventually(t, func() bool { // the cluster config lands right after start
			r, err := c.SubmitJob(ctx, []byte(spec), req)
			if err == nil {
				id = r.JobID
			}
			return err == nil
		}, 10*time.Second, 50*time.Millisecond)
		return id
	}
	svc := submit("kind: service\nname: web\npriority: low\nreplicas: 8\n"+
		"command: [sh, -c, 'echo $$ > pid; exec sleep 600']\nresources: {accelerators: {type: A100, count: 1}}\n", "web")
	// running: the replicas running with their process alive, by task.
	running := func(st *wire.JobStatus) map[structs.TaskID]int {
		out := map[structs.TaskID]int{}
		for _, tk := range st.Tasks {
			if tk.State != structs.TaskRunning {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, "work", "tasks", string(tk.ID), "pid"))
			pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil && perr == nil && syscall.Kill(pid, 0) == nil {
				out[tk.ID] = pid
			}
		}
		return out
	}
	var st *wire.JobStatus
	require.Eventually(t, func() bool {
		st, err = c.Job(ctx, svc)
		return err == nil && len(running(st)) == 8
	}, 30*time.Second, 50*time.Millisecond, "8 replicas run")
	before := running(st)
	nodeOf := map[structs.TaskID]structs.NodeID{}
	for _, tk := range st.Tasks {
		nodeOf[tk.ID] = tk.Node
	}

	normal := submit("kind: command\nname: urgent\ncommand: [sleep, '5']\nresources: {accelerators: {type: A100, count: 4}}\n", "urgent")
	var why *wire.WhyResponse
	require.Eventually(t, func() bool {
		st, err = c.Job(ctx, normal)
		if err != nil || st.Job.State != structs.JobRunning {
			return false
		}
		why, err = c.Why(ctx, svc)
		return err == nil && why.Pending && why.Message == "does not fit now; 0/2 nodes fit: 2 without enough free resources now"
	}, 30*time.Second, 50*time.Millisecond, "the normal job runs in the room the replicas left; the replacements wait: %+v", why)
	st, err = c.Job(ctx, svc)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, st.Job.State)
	assert.Equal(t, 0, st.Job.Attempt, "the service is not requeued")
	left := running(st)
	require.Len(t, left, 4, "4 replicas keep running")
	var stopped []structs.NodeID
	for id, pid := range left {
		assert.Equal(t, before[id], pid, "replica %s runs on in the same process", id)
	}
	for id := range before {
		if _, ok := left[id]; !ok {
			stopped = append(stopped, nodeOf[id])
		}
	}
	require.Len(t, stopped, 4)
	for _, n := range stopped {
		assert.Equal(t, stopped[0], n, "the stopped replicas were all on one node")
	}
	for _, tk := range st.Tasks {
		if _, ok := left[tk.ID]; !ok && nodeOf[tk.ID] != "" {
			assert.Equal(t, structs.StopPreempted, tk.StopReason, "%s", tk.ID)
		}
	}
	evs, err := c.JobEvents(ctx, svc, client.EventQuery{})
	require.NoError(t, err)
	var pre *structs.Event
	for i := range evs.Events {
		if evs.Events[i].Type == structs.EventPreempted {
			pre = &evs.Events[i]
		}
	}
	require.NotNil(t, pre)
	assert.Equal(t, normal, pre.Related)
	assert.Equal(t, int64(4), pre.Freed.Accels)
	assert.Contains(t, pre.Message, "preempted by "+string(normal)+": stopping replicas ")

	require.Eventually(t, func() bool {
		st, err = c.Job(ctx, svc)
		return err == nil && len(running(st)) == 8
	}, 30*time.Second, 50*time.Millisecond, "once the normal job ends the service has its 8 replicas again")
	for id, pid := range left {
		assert.Equal(t, pid, running(st)[id], "replica %s was never stopped", id)
	}
}
