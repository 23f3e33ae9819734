package main_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
)

// TestSIGTERMFromOutside: atom gets SIGTERM (a kubelet deleting its Pod)
// while the coordinator has not stopped the task: it passes it to the job
// and reports the end as stopped from outside, so the coordinator takes
// the task as lost (not the job's failure). As in TestCoordinatorStopsTask,
// the local backend's process only publishes its allocation, for the atom
// the test runs.
func TestSIGTERMFromOutside(t *testing.T) {
	t.Parallel()
	d, c := devCoordinator(t)
	dir := t.TempDir()
	alloc := filepath.Join(dir, "alloc")
	id := submit(t, c, "outside", map[string]any{"cpu": 1, "memory": "1Gi"},
		"sh", "-c", `echo "$ATOM_TASK_ID $ATOM_TOKEN" > `+alloc+`.tmp && mv `+alloc+`.tmp `+alloc+` && exec sleep 1000`)
	var fields []string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(alloc)
		fields = strings.Fields(string(b))
		return err == nil && len(fields) == 2
	}, 10*time.Second, 10*time.Millisecond)

	ready := filepath.Join(dir, "ready")
	cmd := atomCmd(t, []string{"ATOM_COORDINATOR=" + d.URL, "ATOM_TASK_ID=" + fields[0], "ATOM_TOKEN=" + fields[1]},
		"run", "--heartbeat", "10s", "--grace", "5s", "--report-timeout", "5s", "--",
		"sh", "-c", `trap 'echo got SIGTERM; exit 0' TERM; sleep 100 & touch `+ready+`; wait`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "the job's trap exits 0, and so does atom; output: %s", out.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("atom did not end after SIGTERM; output: %s", out.String())
	}
	assert.Contains(t, out.String(), "got SIGTERM\n")

	job := waitJob(t, c, id)
	assert.Equal(t, structs.JobFailed, job.State)
	st, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 1)
	assert.Equal(t, structs.TaskLost, st.Tasks[0].State, "lost, not succeeded: the job did not finish its work")
	assert.Equal(t, "lost: atom got SIGTERM from outside the coordinator (a Pod deleted or evicted, a node shutting down, a kill by hand); the job then ended: exit code 0", st.Tasks[0].Message)
}
