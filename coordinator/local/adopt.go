package local

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leaderFile, in a task's directory, holds its leader's process ID, for
// a later backend on the same Dir to adopt the task when the process that
// started it was killed (kill -9) and left it running.
const leaderFile = "leader.pid"

// adoptPoll is how often an adopted task's leader is looked for: it is no
// child of this process, whose exit could be waited for.
const adoptPoll = 100 * time.Millisecond

// Adopt takes on the tasks under Dir/tasks whose leader, started by an
// earlier backend on the same Dir, still runs: they are Running, Started,
// and Stop and Close stop them as they do the tasks this backend started.
// Each one's end queues EventKindAdoptedEnded, with no exit status (none
// can be read for a process that is not this one's child): under atom,
// the task reports its end itself; the event is for what the task left
// to clean up. Adopt returns the IDs of the tasks it took on, sorted.
func (b *Backend) Adopt() []string {
	ids, err := b.TaskDirs()
	if err != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var adopted []string
	for _, id := range ids {
		if b.closed {
			break
		}
		if _, ok := b.tasks[id]; ok {
			continue
		}
		dir := filepath.Join(b.tasksDir, id)
		raw, err := os.ReadFile(filepath.Join(dir, leaderFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 || !isLeader(pid, dir) {
			continue
		}
		t := &task{pid: pid, running: true, done: make(chan struct{})}
		b.tasks[id] = t
		b.wg.Add(1)
		go b.watch(id, t, dir)
		adopted = append(adopted, id)
	}
	slices.Sort(adopted)
	return adopted
}

// watch marks an adopted task ended once its leader is gone, kills what
// it left in its group, as reap does for a child, and queues
// AdoptedEnded.
func (b *Backend) watch(id string, t *task, dir string) {
	defer b.wg.Done()
	tick := time.NewTicker(adoptPoll)
	defer tick.Stop()
	for range tick.C {
		b.mu.Lock()
		if !isLeader(t.pid, dir) {
			t.running = false
			close(t.done)
			_ = syscall.Kill(-t.pid, syscall.SIGKILL) // ESRCH: nothing was left
			_ = os.Remove(filepath.Join(dir, leaderFile))
			b.mu.Unlock()
			b.queue.push(Event{TaskID: id, Kind: EventKindAdoptedEnded, PID: t.pid, Time: b.clock()})
			return
		}
		b.mu.Unlock()
	}
}

// isLeader reports whether process pid runs and leads its own group in
// the task directory dir: the task's leader, not a process that took its
// number since.
func isLeader(pid int, dir string) bool {
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	return inDir(pid, dir)
}

// writeLeader records a started task's leader in its directory.
func writeLeader(dir string, pid int) {
	_ = os.WriteFile(filepath.Join(dir, leaderFile), []byte(strconv.Itoa(pid)+"\n"), 0o600)
}
