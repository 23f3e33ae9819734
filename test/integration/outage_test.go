package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestDevOutageRequeues: a running job whose coordinator dev was down for
// longer than atom's --stop-after-disconnect (the heartbeat TTL) ended
// Failed, "killed by SIGTERM": atom stopped it, and its report reached no
// server. Now atom leaves its report in the task's directory; the next
// dev on the same data dir sends it on, and the task is lost through no
// fault of the job, which is requeued and runs again, its restarts whole,
// with events saying why. A dev back within the TTL adopts the task,
// which runs on unchanged.
func TestDevOutageRequeues(t *testing.T) {
	const ttl = 8 * time.Second // atom's --stop-after-disconnect
	tmp, data, addr := t.TempDir(), t.TempDir(), freePort(t)
	args := []string{"--data-dir", data, "--heartbeat-ttl", ttl.String()}
	dev := startDevAt(t, addr, tmp, args...)
	c := client.New("http://"+addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 7000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	id := submitWhenReady(t, c, "kind: command\nname: outage\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "outage")
	var first structs.TaskID
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, id)
		if err != nil || st.Job.State != structs.JobRunning || processes(t, marker) != 1 {
			return false
		}
		first = st.Tasks[0].ID
		return true
	}, 30*time.Second, 50*time.Millisecond)
	kill := func() {
		t.Helper()
		require.NoError(t, dev.cmd.Process.Kill())
		<-dev.exited
		dev.exited <- nil // for the cleanup
	}

	// Back within the TTL: adopted, the task runs on unchanged, past the
	// new leader's TTL.
	kill()
	dev = startDevAt(t, addr, tmp, args...)
	require.Never(t, func() bool {
		st, err := c.Job(ctx, id)
		require.NoError(t, err)
		return len(st.Tasks) != 1 || st.Tasks[0].ID != first || st.Tasks[0].State != structs.TaskRunning || processes(t, marker) != 1
	}, 2*ttl, 100*time.Millisecond, "the task runs on, adopted")

	// Down for longer: atom stops the job and leaves its report.
	kill()
	report := filepath.Join(data, "work", "tasks", string(first), "unsent-report.json")
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(report)
		return len(m) == 1 && processes(t, marker) == 0
	}, 3*ttl, 100*time.Millisecond, "atom stops the job and keeps its report")
	startDevAt(t, addr, tmp, args...)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.NotEqual(t, structs.JobFailed, st.Job.State, st.Job.Reason)
		return st.Job.State == structs.JobRunning && len(st.Tasks) == 2 && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond, "the job runs again")
	js, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 1, js.Job.Interrupted)
	assert.Zero(t, js.Job.Restarts(), "not a restart")
	lostMsg := fmt.Sprintf("atom lost the coordinator for %s and stopped the task; the job then ended: killed by SIGTERM", ttl)
	for _, tk := range js.Tasks {
		if tk.ID == first {
			assert.Equal(t, structs.TaskLost, tk.State)
			assert.Equal(t, "lost: "+lostMsg, tk.Message)
		}
	}
	ev, err := c.JobEvents(ctx, id, client.EventQuery{})
	require.NoError(t, err)
	var said []string
	for _, e := range ev.Events {
		said = append(said, string(e.Type)+": "+e.Message)
	}
	all := strings.Join(said, "\n")
	assert.Contains(t, all, "Lost: replica 0 was lost: "+lostMsg)
	assert.Contains(t, all, "Requeued: pending again as attempt 2: replica 0 was lost: "+lostMsg)
	assert.NoFileExists(t, report, "sent, then removed")
}
