package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestDevAdoptsLeftTasks: a task of a coordinator dev killed with kill -9
// runs on and reports to the next dev on the same data dir, which adopts
// its process. Its Ctrl-C stopped only the tasks it had started itself:
// the adopted one ran on until its atom, without heartbeat answers, gave
// up, and the job was Failed for a lost replica. Now the adopted task is
// stopped and requeued as the others are, and the next dev runs the job
// again.
func TestDevAdoptsLeftTasks(t *testing.T) {
	tmp, data, addr := t.TempDir(), t.TempDir(), freePort(t)
	args := []string{"--data-dir", data, "--heartbeat-ttl", "15s"} // time enough for a restart
	dev := startDevAt(t, addr, tmp, args...)
	c := client.New("http://"+addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 6000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	id := submitWhenReady(t, c, "kind: command\nname: left\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "left")
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, id)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond)

	require.NoError(t, dev.cmd.Process.Kill())
	<-dev.exited
	dev.exited <- nil // for the cleanup
	require.Equal(t, 1, processes(t, marker), "the task outlives its coordinator")

	dev = startDevAt(t, addr, tmp, args...)
	dev.interrupt(t)
	assert.Contains(t, dev.out.String(), `msg="adopted the task processes an earlier run left running" tasks=1`)
	assert.Contains(t, dev.out.String(), `msg="requeued the work this server ran: it runs again when a coordinator schedules" tasks=1`)
	assert.Zero(t, processes(t, marker), "the adopted task stopped with its coordinator")

	startDevAt(t, addr, tmp, args...)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.NotEqual(t, structs.JobFailed, st.Job.State, st.Job.Reason)
		return st.Job.State == structs.JobRunning && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond, "the job runs again")
	st, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 2)
	first := st.Tasks[0]
	if first.State == structs.TaskRunning {
		first = st.Tasks[1]
	}
	assert.Equal(t, structs.TaskStopped, first.State)
	assert.Equal(t, structs.StopShutdown, first.StopReason)
	assert.Equal(t, "stopped: coordinator shutting down", first.Message)
}
