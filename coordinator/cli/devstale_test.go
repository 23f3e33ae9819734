package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDevRemovesStaleDirs: a dev killed with SIGKILL left its temporary
// data dir behind. The next dev start removes the dirs whose dev is gone
// and no process works in, unmounting (and naming) what their tasks left
// mounted and read-only there first, and leaves (naming it) one without a
// pid; a dir whose dev runs stays.
func TestDevRemovesStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	exited := exec.Command("true")
	require.NoError(t, exited.Run())
	dead := exited.Process.Pid
	live := func(dir string) int {
		cmd := exec.Command("sleep", "300")
		cmd.Dir = dir
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	dir := func(name string, pid int) string {
		d := filepath.Join(tmp, name)
		require.NoError(t, os.Mkdir(d, 0o700))
		if pid > 0 {
			require.NoError(t, os.WriteFile(filepath.Join(d, devPidFile), []byte(strconv.Itoa(pid)+"\n"), 0o600))
		}
		return d
	}
	gone := dir("atom-dev-1", dead)
	// Its task's configs, mounted read-only on themselves: left mounted
	// by the dev's kill, they kept the dir from being removed. (Only root
	// may mount; the modes stay read-only either way.)
	configs := filepath.Join(gone, "work", "tasks", "t-0-ab12", "configs")
	require.NoError(t, os.MkdirAll(filepath.Join(configs, "srv"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(configs, "srv", "index.html"), []byte("hi\n"), 0o444))
	require.NoError(t, os.Chmod(filepath.Join(configs, "srv"), 0o555))
	mounted := os.Geteuid() == 0
	if mounted {
		require.NoError(t, syscall.Mount(configs, configs, "", syscall.MS_BIND, ""))
		t.Cleanup(func() { _ = syscall.Unmount(configs, syscall.MNT_DETACH) })
		require.NoError(t, syscall.Mount("", configs, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
		require.Equal(t, []string{configs}, mountsUnder(gone))
	}
	running := dir("atom-dev-2", live(tmp))
	old := dir("atom-dev-3", 0)
	busy := dir("atom-dev-4", dead)
	require.NoError(t, os.Mkdir(filepath.Join(busy, "task"), 0o700))
	worker := live(filepath.Join(busy, "task"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var out, errOut bytes.Buffer
	app := App()
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.RunContext(context.Background(), []string{"coordinator", "dev", "--http-addr", ln.Addr().String(), "--log-level", "error"})
	require.ErrorContains(t, err, "address already in use")

	assert.NoDirExists(t, gone)
	assert.DirExists(t, running)
	assert.DirExists(t, old)
	assert.DirExists(t, busy)
	assert.Contains(t, errOut.String(), "coordinator dev: removed "+gone+", left by a dev (pid "+strconv.Itoa(dead)+") that is gone\n")
	if mounted {
		assert.Contains(t, errOut.String(), "coordinator dev: unmounted "+configs+", left mounted by a dev (pid "+strconv.Itoa(dead)+") that is gone\n")
	}
	assert.Empty(t, mountsUnder(tmp))
	assert.Contains(t, errOut.String(), busy+", left by a dev (pid "+strconv.Itoa(dead)+") that is gone, is still in use by pid "+strconv.Itoa(worker)+": left\n")
	assert.Contains(t, errOut.String(), old+" left by an earlier dev that recorded no pid: remove it once no dev uses it\n")
	assert.NotContains(t, errOut.String(), running)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, left, 3, "and the failed dev's own dir is gone")
}

// A dev's temporary dir records its pid.
func TestDevDirRecordsPid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, markDevDir(dir))
	b, err := os.ReadFile(filepath.Join(dir, devPidFile))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))
}
