package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A temporary dev data dir (os.TempDir()/atom-dev-*) holds devPidFile,
// the pid of the dev that made it. A dev killed with SIGKILL cannot remove
// its dir; the next dev start removes those whose dev is gone. It removes
// only a dir of this user whose file names a pid that no process has and
// that no process works in (a task the dev started may outlive it): a
// dir whose dev may still run (the pid is alive, perhaps reused by another
// process) or that has no such file (made by an older dev) is left, the
// latter named. What its tasks left mounted in it (their configs' read-only
// mounts) is unmounted first.
const devPidFile = "dev.pid"

// markDevDir records this process as the owner of temporary dir dir.
func markDevDir(dir string) error {
	return os.WriteFile(filepath.Join(dir, devPidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// removeStaleDevDirs removes the temporary dev dirs whose dev is gone,
// saying so on w, and names the ones it leaves for want of a pid file.
func removeStaleDevDirs(w io.Writer) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "atom-dev-*"))
	var unknown []string
	for _, dir := range dirs {
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
			continue // another user's
		}
		b, err := os.ReadFile(filepath.Join(dir, devPidFile))
		if errors.Is(err, os.ErrNotExist) {
			unknown = append(unknown, dir)
			continue
		}
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		if p := workingIn(dir); p > 0 {
			fmt.Fprintf(w, "coordinator dev: %s, left by a dev (pid %d) that is gone, is still in use by pid %d: left\n", dir, pid, p)
			continue
		}
		if !unmountLeft(w, dir, pid) {
			continue
		}
		if err := removeTree(dir); err != nil {
			fmt.Fprintf(w, "coordinator dev: could not remove %s, left by a dev (pid %d) that is gone: %v\n", dir, pid, err)
			continue
		}
		fmt.Fprintf(w, "coordinator dev: removed %s, left by a dev (pid %d) that is gone\n", dir, pid)
	}
	if len(unknown) > 0 {
		fmt.Fprintf(w, "coordinator dev: %s left by an earlier dev that recorded no pid: remove it once no dev uses it\n", strings.Join(unknown, ", "))
	}
}

// unmountLeft unmounts what is mounted in dir, the stale dir of a dev
// (pid) that is gone: the read-only mounts of its tasks' configs, when it
// was killed before it could unmount them. It says what it unmounted, and
// what it could not, on w, and reports whether nothing is mounted there
// now: a dir is never removed through a mount, which would remove the
// mounted files.
func unmountLeft(w io.Writer, dir string, pid int) bool {
	var done []string
	for _, p := range mountsUnder(dir) {
		if err := unmount(p); err != nil {
			fmt.Fprintf(w, "coordinator dev: could not unmount %s, left mounted by a dev (pid %d) that is gone: %v: %s is left\n", p, pid, err, dir)
			return false
		}
		done = append(done, p)
	}
	if len(done) > 0 {
		fmt.Fprintf(w, "coordinator dev: unmounted %s, left mounted by a dev (pid %d) that is gone\n", strings.Join(done, ", "), pid)
	}
	return true
}

// removeTree removes dir and what it holds, read-only directories (a
// task's configs) included.
func removeTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// alive reports whether a process pid exists (one of another user's
// counts).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// workingIn returns a process of this user whose working directory is
// dir or under it, or 0.
func workingIn(dir string) int {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, l := range cwds {
		cwd, err := os.Readlink(l)
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(l))); err == nil {
			return pid
		}
	}
	return 0
}
