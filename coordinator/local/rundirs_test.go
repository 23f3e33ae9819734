package local_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/local"
)

// runDirs lists base's directories of TMPDIR links.
func runDirs(t *testing.T, base string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(base, "atom-*"))
	require.NoError(t, err)
	return dirs
}

// A coordinator killed with kill -9 leaves its directory of TMPDIR links
// (Close never ran); the next backend made in the same place removes it,
// and only it: a live coordinator's stays, and so does a directory that
// is not a backend's.
func TestKilledOwnersRunDirSwept(t *testing.T) {
	base := t.TempDir()
	live := newBackend(t, local.Config{RunDir: base})
	start(t, live, "live-0-ab12", sh("sleep 30"))
	waitEvent(t, live, "live-0-ab12", local.EventKindStarted)
	mine := runDirs(t, base)
	require.Len(t, mine, 1)
	other := filepath.Join(base, "atom-not-a-backend")
	require.NoError(t, os.Mkdir(other, 0o700))

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "LOCAL_TEST_OWN_RUNDIR="+base, "LOCAL_TEST_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.Len(t, runDirs(t, base), 3)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Len(t, runDirs(t, base), 3, "kill -9 leaves it")

	newBackend(t, local.Config{RunDir: base})
	left := runDirs(t, base)
	assert.Len(t, left, 3, "the killed one's is gone; the live one's, the new one's and the other stay: %v", left)
	assert.Contains(t, left, other)
	assert.Contains(t, left, mine[0])
}
