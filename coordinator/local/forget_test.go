package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/local"
)

// TestForgetRemovesEndedTasksOnly: Forget removes an ended task's
// directory, output included, and refuses a running task's; TaskDirs
// lists what is left. (Task directories stayed for ever: see the daemon's
// TestExpiredTasksLeaveNoDirectory.)
func TestForgetRemovesEndedTasksOnly(t *testing.T) {
	b := newBackend(t, local.Config{})
	start(t, b, "done-0", sh("echo bye"))
	waitExits(t, b, "done-0")
	start(t, b, "runs-0", sh("exec sleep 60"))
	waitEvent(t, b, "runs-0", local.EventKindStarted)
	ids, err := b.TaskDirs()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"done-0", "runs-0"}, ids)

	assert.EqualError(t, b.Forget("runs-0"), "task runs-0 still runs: its directory stays")
	require.NoError(t, b.Forget("done-0"))
	_, err = os.Stat(filepath.Dir(b.LogPath("done-0")))
	assert.True(t, os.IsNotExist(err), "%v", err)
	require.NoError(t, b.Forget("done-0"), "forgetting twice is harmless")
	assert.Error(t, b.Forget("../x"), "not a task ID")
	ids, err = b.TaskDirs()
	require.NoError(t, err)
	assert.Equal(t, []string{"runs-0"}, ids)
	assert.Equal(t, "", readLog(t, b, "runs-0"))
}
