package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestDevServiceScalesToZeroAndBack: a real 2-replica service of real
// processes in coordinator dev is scaled to 0 (both processes get
// SIGTERM and end; its quota is released; it stays Running, parked,
// while other work runs), then to 2 (two new processes run, charged
// again).
func TestDevServiceScalesToZeroAndBack(t *testing.T) {
	d, dir := startDev(t)
	c := client.New(d.URL, adminToken)
	ctx := context.Background()

	// Each replica writes its PID, then becomes sleep (SIGTERM ends it).
	spec := []byte("kind: service\nname: web\nreplicas: 2\nminAvailable: 2\n" +
		"command: [sh, -c, 'echo $$ > pid; exec sleep 600']\nresources: {cpu: 1, memory: 1Gi}\n")
	var id structs.JobID
	require.Eventually(t, func() bool { // the cluster config lands right after start
		r, err := c.SubmitJob(ctx, spec, "web")
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	pids := func(want int) map[structs.TaskID]int {
		t.Helper()
		out := map[structs.TaskID]int{}
		require.Eventually(t, func() bool {
			st, err := c.Job(ctx, id)
			if err != nil || st.Job.State != structs.JobRunning {
				return false
			}
			clear(out)
			for _, tk := range st.Tasks {
				if tk.State != structs.TaskRunning {
					continue
				}
				b, err := os.ReadFile(filepath.Join(dir, "work", "tasks", string(tk.ID), "pid"))
				pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || perr != nil || syscall.Kill(pid, 0) != nil {
					return false
				}
				out[tk.ID] = pid
			}
			return len(out) == want
		}, 20*time.Second, 50*time.Millisecond)
		return out
	}
	cpuUsed := func() int64 {
		q, err := c.Quota(ctx, "user:dev")
		require.NoError(t, err)
		return q.Usage[structs.KeyCPU]
	}
	first := pids(2)
	assert.Equal(t, int64(2000), cpuUsed())

	st, err := c.ScaleService(ctx, id, 0)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, st.Job.State)
	assert.Equal(t, state.ParkedReason, st.Job.Reason)
	assert.Zero(t, cpuUsed(), "released when the scale is answered")
	require.Eventually(t, func() bool {
		for _, pid := range first {
			if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "both processes end")
	require.Eventually(t, func() bool {
		st, err = c.Job(ctx, id)
		if err != nil {
			return false
		}
		for _, tk := range st.Tasks {
			if tk.State.HoldsResources() {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond)
	for _, tk := range st.Tasks {
		assert.Equal(t, structs.StopScaled, tk.StopReason, "%s stopped, not crashed", tk.ID)
	}

	// Scheduling goes on (a job submitted after the park runs to its
	// end) and places nothing for the parked service.
	r, err := c.SubmitJob(ctx, []byte("kind: command\nname: after\ncommand: ['true']\nresources: {cpu: 1, memory: 1Gi}\n"), "after")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, r.JobID)
		return err == nil && st.Job.State == structs.JobSucceeded
	}, 20*time.Second, 50*time.Millisecond)
	st, err = c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, st.Job.State)
	assert.Equal(t, state.ParkedReason, st.Job.Reason)
	assert.Len(t, st.Tasks, 2, "no replica placed while parked")
	assert.Zero(t, st.Job.ReplicaRestarts)

	_, err = c.ScaleService(ctx, id, 2)
	require.NoError(t, err)
	second := pids(2)
	for tid := range second {
		assert.NotContains(t, first, tid, "new tasks")
	}
	assert.Equal(t, int64(2000), cpuUsed())
}
