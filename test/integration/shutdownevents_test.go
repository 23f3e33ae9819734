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

// TestDevInterruptGangEvents: Ctrl-C on coordinator dev while a job of two
// replicas runs requeues it, and its events say so: each replica stopped,
// the job requeued without using a restart (Requeuing, never Restarting),
// then pending again as attempt 2. Both replicas' tasks say the same:
// Stopped for the shutdown (the second was neither lost nor stopped for
// a gang restart), ended when their Stopped events say.
func TestDevInterruptGangEvents(t *testing.T) {
	tmp, data := t.TempDir(), t.TempDir()
	dev := startDev(t, tmp, "--data-dir", data)
	c := client.New("http://"+dev.addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 6000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	id := submitWhenReady(t, c, "kind: command\nname: pair\nreplicas: 2\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "pair")
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, id)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 2
	}, 30*time.Second, 50*time.Millisecond)

	dev.interrupt(t)
	dev = startDev(t, tmp, "--data-dir", data)
	c = client.New("http://"+dev.addr, token)
	ev, err := c.JobEvents(ctx, id, client.EventQuery{})
	require.NoError(t, err)
	var said []string
	stoppedAt := map[structs.TaskID]time.Time{}
	for _, e := range ev.Events {
		if e.Type == structs.EventStopped {
			stoppedAt[e.Task] = e.Time
		}
		if e.Type == structs.EventStopped || len(said) > 0 {
			said = append(said, fmt.Sprintf("%d %s: %s", structs.AttemptNumber(e.Attempt), e.Type, e.Message))
		}
		if e.Type == structs.EventRequeued {
			break
		}
	}
	assert.Equal(t, []string{
		"1 Stopped: replica 0 stopped: coordinator shutting down",
		"1 Requeuing: stopped: coordinator shutting down; stopping 1 task(s) first, then pending again without using a restart",
		"1 Stopped: replica 1 stopped: coordinator shutting down",
		"2 Requeued: pending again as attempt 2: stopped: coordinator shutting down",
	}, said)
	st, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Zero(t, st.Job.Restarts(), "not a restart")
	n := 0
	for _, tk := range st.Tasks {
		if tk.Attempt == 0 {
			n++
			assert.Equal(t, []any{structs.TaskStopped, structs.StopShutdown, structs.ShutdownMessage}, []any{tk.State, tk.StopReason, tk.Message}, tk.ID)
			assert.Equal(t, stoppedAt[tk.ID], tk.EndedAt, tk.ID)
		}
	}
	assert.Equal(t, 2, n)
}
