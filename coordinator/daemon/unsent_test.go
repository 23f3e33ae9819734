package daemon_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/pkg/structs"
)

const lostReport = `{"state":"Failed","exitCode":143,"reason":"CoordinatorLost","message":"atom lost the coordinator for 15s and stopped the task; the job then ended: killed by SIGTERM","time":"2026-12-04T15:00:00Z"}`

// The report atom left because no server took it (ATOM_UNSENT_REPORT,
// in the task's directory) is what the backend reports of the task's
// end, not its exit status, and is removed once sent: from a task it
// started, and from one an earlier run of the server left.
func TestLocalBackendSendsUnsentReports(t *testing.T) {
	atom := filepath.Join(t.TempDir(), "atom")
	require.NoError(t, os.WriteFile(atom, []byte("#!/bin/sh\necho '"+lostReport+"' > \"$ATOM_UNSENT_REPORT\"\nexit 143\n"), 0o755))
	lb, run, r := newLocalBackend(t, atom)
	j := &structs.Job{ID: "cut-1", Kind: structs.KindCommand, Replicas: 1, Command: []string{"sleep"}, Args: []string{"600"}}
	tk := localTask(j)
	require.NoError(t, lb.Start(backend.Launch{Task: tk, Job: j, Token: "tok"}))
	ev := waitEnded(t, r, tk.ID)
	assert.Equal(t, structs.ReasonDisconnected, ev.Reason)
	assert.Equal(t, 143, ev.ExitCode)
	assert.Equal(t, "atom lost the coordinator for 15s and stopped the task; the job then ended: killed by SIGTERM", ev.Message)
	assert.Equal(t, time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC), ev.Time.UTC(), "when it ended, not when it was sent")
	unsent := filepath.Join(filepath.Dir(run.LogPath(string(tk.ID))), "unsent-report.json")
	assert.NoFileExists(t, unsent, "removed once sent")

	// A server started again on the directory sends what was left there.
	dir := t.TempDir()
	left := filepath.Join(dir, "tasks", "left-1-0-0001")
	require.NoError(t, os.MkdirAll(left, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(left, "unsent-report.json"), []byte(lostReport), 0o600))
	run2, err := local.New(local.Config{Dir: dir})
	require.NoError(t, err)
	r2 := &reports{evs: map[structs.TaskID][]structs.TaskEvent{}}
	lb2 := daemon.NewLocalBackend(run2, r2, "http://127.0.0.1:1", atom, 50*time.Millisecond, quiet())
	t.Cleanup(lb2.Close)
	ev = waitEnded(t, r2, "left-1-0-0001")
	assert.Equal(t, structs.ReasonDisconnected, ev.Reason)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(left, "unsent-report.json"))
		return os.IsNotExist(err)
	}, 10*time.Second, 10*time.Millisecond, "removed once sent")
}
