package mpi

import (
	"bytes"
	"regexp"
	"strconv"
	"sync"
)

// Failure is what mpirun reported as the job's failure: the rank that
// failed first, or (Launch) atom rsh failing to start Open MPI's daemon
// on a worker.
type Failure struct {
	Rank int
	Host string // the node as mpirun named it (Launch: the hostfile's host); "" when it did not
	How  string // "exited with code 7", "was killed by signal 9 (Killed)", ...; Launch: atom rsh's error
	// Launch: atom rsh, mpirun's launch agent, failed (Rank is -1): the
	// daemon, and so the ranks, of Host may not have started.
	Launch bool
}

// maxLine bounds the bytes of a line the Watcher keeps: mpirun's reports
// are short, and a longer line (a rank's own output) cannot be one.
const maxLine = 512

// What mpirun 4.x prints (help-orterun.txt, help-mpi-api.txt), one line
// at a time, trimmed. A report that spans two lines is matched by its
// first line (kept as pending) and then its second.
var (
	reProcName = regexp.MustCompile(`^Process name: \[\[\d+,1\],(\d+)\]$`)
	reExitCode = regexp.MustCompile(`^Exit code:\s+(-?\d+)$`)
	reSignal   = regexp.MustCompile(`^\S+ noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \((.+)\))?\.$`)
	reAbort    = regexp.MustCompile(`^MPI_ABORT was invoked on rank (\d+) in communicator \S+$`)
	reAbortErr = regexp.MustCompile(`^with errorcode (-?\d+)\.$`)
	reExited   = regexp.MustCompile(`^\S+ has exited due to process rank (\d+) with PID \d+ on$`)
	reExitedOn = regexp.MustCompile(`^node (\S+) (exiting improperly|calling "abort")\.`)
	// atom rsh's own error, which mpirun passes on from its launch agent.
	reRshHost = regexp.MustCompile(`^atom rsh: host (\S+): (.+)$`)
	reRsh     = regexp.MustCompile(`^atom rsh: (.+)$`)
)

// Watcher reads mpirun's stderr (Write) and keeps the first failed rank
// Open MPI reports. It keeps at most two lines of maxLine bytes.
type Watcher struct {
	mu      sync.Mutex
	line    []byte
	long    bool           // the current line passed maxLine: it matches nothing
	pending *regexp.Regexp // the second line a report's first line awaits
	first   []string       // the first line's submatches
	found   *Failure
}

// Write implements io.Writer; it never fails.
func (w *Watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 && w.found == nil {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if len(w.line)+len(chunk) > maxLine {
			w.long = true
		} else if !w.long {
			w.line = append(w.line, chunk...)
		}
		if i < 0 {
			break
		}
		if !w.long {
			w.scan(string(bytes.TrimSpace(w.line)))
		}
		w.line, w.long, p = w.line[:0], false, p[i+1:]
	}
	return n, nil
}

// Failure is the first failed rank reported so far, if any.
func (w *Watcher) Failure() (Failure, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found == nil {
		return Failure{}, false
	}
	return *w.found, true
}

func (w *Watcher) scan(l string) {
	if w.pending != nil {
		m, first := w.pending.FindStringSubmatch(l), w.first
		re := w.pending
		w.pending, w.first = nil, nil
		if m != nil {
			w.second(re, first, m)
			return
		}
	}
	if m := reRshHost.FindStringSubmatch(l); m != nil {
		w.found = &Failure{Rank: -1, Host: m[1], How: m[2], Launch: true}
		return
	}
	if m := reRsh.FindStringSubmatch(l); m != nil {
		w.found = &Failure{Rank: -1, How: m[1], Launch: true}
		return
	}
	if m := reSignal.FindStringSubmatch(l); m != nil {
		how := "was killed by signal " + m[3]
		if m[4] != "" {
			how += " (" + m[4] + ")"
		}
		w.found = &Failure{Rank: atoi(m[1]), Host: m[2], How: how}
		return
	}
	for _, p := range []struct{ first, second *regexp.Regexp }{{reProcName, reExitCode}, {reAbort, reAbortErr}, {reExited, reExitedOn}} {
		if m := p.first.FindStringSubmatch(l); m != nil {
			w.pending, w.first = p.second, m
			return
		}
	}
}

func (w *Watcher) second(re *regexp.Regexp, first, m []string) {
	f := Failure{Rank: atoi(first[1])}
	switch re {
	case reExitCode:
		f.How = "exited with code " + m[1]
	case reAbortErr:
		f.How = "called MPI_Abort with error code " + m[1]
	default: // reExitedOn
		f.Host = m[1]
		f.How = "exited without calling MPI_Finalize"
		if m[2] != "exiting improperly" {
			f.How = `called "abort"`
		}
	}
	w.found = &f
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the patterns match digits only
	return n
}
