package local_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/local"
)

// A task whose coordinator was killed (kill -9) runs on; the next backend
// on the same directory adopts it: it is Running and Started, and Stop
// ends it as it would a task of its own; its end is one AdoptedEnded
// event (what the task left, its configs' mount, is cleaned up on it). A
// task directory whose leader is gone is not adopted.
func TestAdoptLeftTasks(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "LOCAL_TEST_START=left-0-ab12", "LOCAL_TEST_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	raw, err := os.ReadFile(filepath.Join(dir, "tasks", "left-0-ab12", "leader.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.True(t, alive(pid), "the task outlives its coordinator")

	gone := filepath.Join(dir, "tasks", "gone-0-cd34")
	require.NoError(t, os.MkdirAll(gone, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(gone, "leader.pid"), []byte("999999999\n"), 0o600))

	b := newBackend(t, local.Config{Dir: dir})
	assert.Equal(t, []string{"left-0-ab12"}, b.Adopt())
	assert.Equal(t, []string{"left-0-ab12"}, b.Running())
	assert.True(t, b.Started("left-0-ab12"), "not started again")
	assert.Empty(t, b.Adopt(), "adopted once")

	require.NoError(t, b.Stop("left-0-ab12", time.Second))
	require.Eventually(t, func() bool { return len(b.Running()) == 0 }, waitFor, tick, "its end is seen")
	assert.False(t, alive(pid), "the process is gone")
	ev := waitEvent(t, b, "left-0-ab12", local.EventKindAdoptedEnded)
	assert.Equal(t, pid, ev.PID)
	assert.NoFileExists(t, filepath.Join(dir, "tasks", "left-0-ab12", "leader.pid"))
	for _, ev := range closeAndDrain(t, b) {
		assert.NotEqual(t, "left-0-ab12", ev.TaskID, "one event: %v", ev)
	}
}

// alive reports whether process pid runs: it exists and is no zombie
// (an orphan's zombie stays where nothing reaps it, as in a container).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: take it as running
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
