package integration

import (
	"bufio"
	"fmt"
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

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// mountsIn returns the mount points at dir or below it.
func mountsIn(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}

// unmountIn unmounts, for a failed test, what is mounted in dir, so that
// its temporary directory can go.
func unmountIn(t *testing.T, dir string) {
	for _, p := range mountsIn(t, dir) {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// startPages runs coordinator dev with args, creates config pages and
// starts a service that mounts it at /srv: running once its configs are
// mounted (read-only on themselves, where the dev may mount).
func startPages(t *testing.T, addr, tmp, marker string, args ...string) (*devProc, *client.Client, structs.JobID) {
	t.Helper()
	dev := startDevAt(t, addr, tmp, args...)
	c := client.New("http://"+addr, token)
	page := filepath.Join(t.TempDir(), "index.html")
	require.NoError(t, os.WriteFile(page, []byte("<p>hello</p>\n"), 0o600))
	out, err := exec.Command(filepath.Join(binDir, "coordinator"), "--addr", "http://"+addr, "--token", token,
		"config", "create", "pages", "--from-file", "index.html="+page).CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := submitWhenReady(t, c, "kind: service\nname: pages\ncommand: [sh, -c, 'exec "+marker+"']\nconfigs: [{config: pages, mountPath: /srv}]\nresources: {cpu: 1, memory: 1Gi}\n", "pages")
	require.Eventually(t, func() bool {
		st, err := c.Job(t.Context(), id)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond)
	return dev, c, id
}

// TestDevAdoptedTaskUnmountsItsConfigs: a service's configs are mounted
// read-only in its task's directory. kill -9 of coordinator dev, a new
// dev on the same data dir (which adopts the task), and its Ctrl-C left
// them mounted: the data dir could not be removed ("Read-only file
// system"). Now the adopted task's end unmounts them as a task's own
// does.
func TestDevAdoptedTaskUnmountsItsConfigs(t *testing.T) {
	tmp, data, addr := t.TempDir(), t.TempDir(), freePort(t)
	t.Cleanup(func() { unmountIn(t, data) })
	marker := fmt.Sprintf("sleep %d", 7000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	args := []string{"--data-dir", data, "--heartbeat-ttl", "15s"} // time enough for a restart
	dev, _, _ := startPages(t, addr, tmp, marker, args...)
	if os.Geteuid() == 0 { // only root may mount; the files' modes keep them read-only either way
		require.Len(t, mountsIn(t, data), 1, "the task's configs are mounted")
	}

	require.NoError(t, dev.cmd.Process.Kill())
	<-dev.exited
	dev.exited <- nil // for the cleanup
	require.Equal(t, 1, processes(t, marker), "the task outlives its coordinator")
	dev = startDevAt(t, addr, tmp, args...)
	dev.interrupt(t)
	require.Contains(t, dev.out.String(), `msg="adopted the task processes an earlier run left running" tasks=1`)
	assert.Zero(t, processes(t, marker), "the adopted task stopped with its coordinator")
	assert.Empty(t, mountsIn(t, data), "its configs went with it")
	require.NoError(t, os.RemoveAll(data), "the data dir can be removed")
}

// TestDevRemovesStaleDirWithMounts: coordinator dev on a temporary data
// dir is killed with kill -9, and so is its task: the task's configs
// stay mounted read-only in the dir, which every later dev failed to
// remove ("read-only file system"). The next dev unmounts them, says so,
// and removes the dir.
func TestDevRemovesStaleDirWithMounts(t *testing.T) {
	tmp, addr := t.TempDir(), freePort(t)
	t.Cleanup(func() { unmountIn(t, tmp) })
	marker := fmt.Sprintf("sleep %d", 8000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	dev, _, _ := startPages(t, addr, tmp, marker)
	dirs, err := filepath.Glob(filepath.Join(tmp, "atom-dev-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	stale := dirs[0]
	mounted := os.Geteuid() == 0
	if mounted {
		require.Len(t, mountsIn(t, stale), 1, "the task's configs are mounted")
	}

	require.NoError(t, dev.cmd.Process.Kill())
	<-dev.exited
	dev.exited <- nil // for the cleanup
	// The task goes too (as after a reboot's kill of everything): kill
	// -9 of every process that works in the dir.
	require.Eventually(t, func() bool { return killWorkingIn(stale) == 0 }, 30*time.Second, 50*time.Millisecond)

	dev = startDev(t, tmp)
	dev.interrupt(t)
	log := dev.out.String()
	if mounted {
		assert.Regexp(t, `coordinator dev: unmounted `+stale+`/work/tasks/pages-\S+/configs, left mounted by a dev \(pid \d+\) that is gone\n`, log)
	}
	assert.Regexp(t, `coordinator dev: removed `+stale+`, left by a dev \(pid \d+\) that is gone\n`, log)
	assert.NotContains(t, log, "could not remove")
	assert.NoDirExists(t, stale)
	assert.Empty(t, mountsIn(t, tmp))
}

// killWorkingIn sends SIGKILL to each process working in dir or below,
// and returns how many it found.
func killWorkingIn(dir string) int {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	n := 0
	for _, l := range cwds {
		cwd, err := os.Readlink(l)
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(l))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n
}
