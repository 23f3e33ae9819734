package reap

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillDescendants sends SIGKILL to every descendant of this process still
// alive after settle (those about to end on their own, such as mpirun's
// launch agents finishing, are let go) and returns how many it signalled.
// atom calls it once its job has ended, as the kernel does to a
// container's processes when its PID 1 exits: orphans a job left behind
// (in other process groups or sessions, which a group kill misses)
// re-parented to atom, the subreaper, so they are found here.
func KillDescendants(settle time.Duration) int {
	self := os.Getpid()
	deadline := time.Now().Add(settle)
	for len(descendants(self)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	for _, pid := range descendants(self) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// descendants lists the live (not zombie) descendants of pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
