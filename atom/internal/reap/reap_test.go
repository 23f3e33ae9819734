//go:build linux

package reap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/reap"
)

// TestReaperKeepsTheJobsStatus: as a subreaper, the test process inherits
// the job's orphan; the reaper reaps it and still hands the job's own
// status to Start's channel, never losing it to the reaping.
func TestReaperKeepsTheJobsStatus(t *testing.T) {
	require.NoError(t, reap.BecomeSubreaper())
	r := reap.New()
	defer r.Close()
	for range 20 {
		st, err := r.Start(exec.Command("sh", "-c", `sh -c "exit 9" & exit 3`))
		require.NoError(t, err)
		select {
		case ws := <-st:
			assert.Equal(t, 3, ws.ExitStatus())
		case <-time.After(10 * time.Second):
			t.Fatal("the job's status never arrived")
		}
	}
	require.Eventually(t, func() bool { return children(t) == "" }, 10*time.Second, 10*time.Millisecond, "orphans are reaped, no zombies left")
}

// children lists this process's children (zombies included) from /proc.
func children(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	var all []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			all = append(all, strings.TrimSpace(string(b)))
		}
	}
	return strings.TrimSpace(strings.Join(all, " "))
}
