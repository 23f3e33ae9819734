package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// proc is a process of one of this run's tasks: atom itself or what it
// runs. Every job the suite submits carries CHAOS_RUN=<run ID> in its env,
// which atom and its children inherit.
type proc struct {
	pid, ppid int
	task      string // ATOM_TASK_ID
	atom      bool   // `atom run` itself (else a child of it)
}

// taskProcs lists the live processes of run's tasks (zombies excluded).
func taskProcs(run, atomBin string) []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	marker := []byte("CHAOS_RUN=" + run)
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		p := proc{pid: pid}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// pid (comm) state ppid ...: comm may hold spaces and parentheses.
			i := bytes.LastIndexByte(stat, ')')
			f := bytes.Fields(stat[i+1:])
			if i < 0 || len(f) < 2 || f[0][0] == 'Z' {
				continue
			}
			p.ppid, _ = strconv.Atoi(string(f[1]))
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("ATOM_TASK_ID=")); ok {
				p.task = string(v)
			}
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			args := bytes.Split(cmd, []byte{0})
			p.atom = len(args) > 1 && string(args[0]) == atomBin && string(args[1]) == "run"
		}
		out = append(out, p)
	}
	return out
}

// killAll kills every process of run's tasks (the end of a run: whatever
// a killed atom left behind).
func killAll(run, atomBin string) int {
	n := 0
	for _, p := range taskProcs(run, atomBin) {
		if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
