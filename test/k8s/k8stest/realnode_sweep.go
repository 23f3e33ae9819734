package k8stest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
)

// sweepProcesses SIGKILLs every process but this one whose command line
// names a path under prefix (containerd, its shims, the kubelet and what
// they run) and every process in a kubepods cgroup (the containers), and
// waits until they are gone. It returns how many it killed.
func sweepProcesses(prefix string) (int, error) {
	var pids []int
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmd), prefix) {
			pids = append(pids, pid)
		}
	}
	cgroups := kubepodsCgroups()
	for _, cg := range cgroups {
		if strings.Contains(cg, "/freezer/") {
			_ = os.WriteFile(filepath.Join(cg, "freezer.state"), []byte("THAWED"), 0o644)
		}
		pids = append(pids, cgroupPIDs(cg)...)
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var alive []int
		for _, pid := range pids {
			if processAlive(pid) {
				alive = append(alive, pid)
			}
		}
		for _, cg := range cgroups {
			alive = append(alive, cgroupPIDs(cg)...)
		}
		if len(alive) == 0 {
			return len(pids), nil
		}
		if time.Now().After(deadline) {
			return len(pids), fmt.Errorf("processes of an earlier real node still alive 15s after SIGKILL: %v", alive)
		}
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// kubepodsCgroups returns every cgroup under a kubepods cgroup of any
// hierarchy (the kubelet's, with the cgroupfs driver), deepest first.
func kubepodsCgroups() []string {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/kubepods") // cgroup v2
	}
	var all []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, p)
			}
			return nil
		})
	}
	slices.SortFunc(all, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return all
}

func cgroupPIDs(cg string) []int {
	b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeKubepodsCgroups removes the kubelet's cgroups, deepest first.
func removeKubepodsCgroups() error {
	var errs []error
	for _, cg := range kubepodsCgroups() {
		if err := syscall.Rmdir(cg); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", cg, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder returns the mount points whose path starts with prefix (a
// string prefix, not a path: a node directory's name prefix finds every
// node's mounts), in mount table order (parents before children). It
// finds none when the table cannot be read.
func mountsUnder(prefix string) []string {
	infos, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !strings.HasPrefix(m.Mountpoint, prefix), false
	})
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range infos {
		out = append(out, m.Mountpoint)
	}
	return out
}

// unmountUnder detaches every mount under prefix (container root
// filesystems, sandbox /dev/shm, network namespaces, Pod volumes),
// children first, and returns how many.
func unmountUnder(prefix string) (int, error) {
	n := 0
	for range 5 {
		ms := mountsUnder(prefix)
		if len(ms) == 0 {
			return n, nil
		}
		for i := len(ms) - 1; i >= 0; i-- {
			if err := syscall.Unmount(ms[i], syscall.MNT_DETACH); err == nil {
				n++
			}
		}
	}
	if ms := mountsUnder(prefix); len(ms) > 0 {
		return n, fmt.Errorf("could not unmount %d mounts under %s, e.g. %s", len(ms), prefix, ms[0])
	}
	return n, nil
}

// removeShimSockets removes the sockets that containerd 1.6's runc shims of
// the node in dir made under /run/containerd/s (named by a hash of
// containerd's address, the namespace and the container ID, wherever the
// state directory is): a killed shim leaves its socket.
func removeShimSockets(dir string) {
	address := filepath.Join(dir, "containerd", "containerd.sock")
	tasks := filepath.Join(dir, "containerd", "state", "io.containerd.runtime.v2.task")
	namespaces, _ := os.ReadDir(tasks)
	for _, ns := range namespaces {
		ids, _ := os.ReadDir(filepath.Join(tasks, ns.Name()))
		for _, id := range ids {
			sum := sha256.Sum256([]byte(filepath.Join(address, ns.Name(), id.Name())))
			_ = os.Remove(fmt.Sprintf("/run/containerd/s/%x", sum))
		}
	}
}

// sweep stops what a real node (this one in dir, or an earlier one that
// was killed, recorded in s) left running, unmounts what it mounted,
// removes its cgroups and directory, and undoes its changes to the
// machine (restoreHost). It says what it found for the log.
func sweep(dir string, s *hostState, keepDir bool) (string, error) {
	var errs []error
	prefix := realNodeDirPrefix()
	killed, err := sweepProcesses(prefix)
	errs = append(errs, err)
	unmounted, err := unmountUnder(prefix)
	errs = append(errs, err)
	errs = append(errs, removeKubepodsCgroups())
	dirs := []string{}
	if dir != "" {
		dirs = append(dirs, dir)
	}
	if s != nil && s.Dir != "" && s.Dir != dir {
		dirs = append(dirs, s.Dir)
	}
	for _, d := range dirs {
		removeShimSockets(d)
	}
	bridge := linkExists(RealNodeBridge)
	errs = append(errs, restoreHost(s)...)
	for _, d := range dirs {
		if keepDir && d == dir {
			continue
		}
		if !strings.HasPrefix(d, prefix) {
			errs = append(errs, fmt.Errorf("not removing %s: not a real node's directory (%s*)", d, prefix))
			continue
		}
		if ms := mountsUnder(d + "/"); len(ms) > 0 {
			errs = append(errs, fmt.Errorf("not removing %s: %d mounts left, e.g. %s", d, len(ms), ms[0]))
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	what := fmt.Sprintf("killed %d processes, unmounted %d", killed, unmounted)
	if bridge {
		what += ", deleted bridge " + RealNodeBridge
	}
	return what, errors.Join(errs...)
}

// leftovers lists what a closed real node left on the machine that its
// teardown should have removed or restored.
func leftovers(dir string, s *hostState) []string {
	var out []string
	prefix := realNodeDirPrefix()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(cmd), prefix) {
			if pid, _ := strconv.Atoi(e.Name()); pid != os.Getpid() && processAlive(pid) {
				out = append(out, "process "+describePID(e.Name()))
			}
		}
	}
	if ms := mountsUnder(prefix); len(ms) > 0 {
		out = append(out, fmt.Sprintf("%d mounts under %s*, e.g. %s", len(ms), prefix, ms[0]))
	}
	if cgs := kubepodsCgroups(); len(cgs) > 0 {
		out = append(out, fmt.Sprintf("%d kubepods cgroups, e.g. %s", len(cgs), cgs[0]))
	}
	if linkExists(RealNodeBridge) {
		out = append(out, "bridge "+RealNodeBridge)
	}
	if s == nil {
		return out
	}
	if s.LoAddr && loHasNodeIP() {
		out = append(out, RealNodeIP+" on lo")
	}
	for k, v := range s.Sysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil && strings.TrimSpace(string(b)) != v {
			out = append(out, fmt.Sprintf("sysctl %s is %s, was %s", strings.ReplaceAll(k, "/", "."), strings.TrimSpace(string(b)), v))
		}
	}
	for _, p := range s.Created {
		if p == "/run/containerd" {
			continue // shared with any other containerd
		}
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p+" (made by the real node)")
		}
	}
	links, _ := os.ReadDir("/var/log/containers")
	for _, e := range links {
		if t, err := os.Readlink(filepath.Join("/var/log/containers", e.Name())); err == nil && strings.HasPrefix(t, prefix) {
			out = append(out, "link /var/log/containers/"+e.Name())
		}
	}
	return out
}
