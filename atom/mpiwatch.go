package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/plugins/mpi"
)

// drainFor bounds how long atom waits, once the job has ended, for the
// rest of mpirun's stderr (a process left behind may hold the pipe).
const drainFor = 2 * time.Second

// mpiWatch passes an MPI launcher's stderr (mpirun's) through to atom's
// own, unchanged and as it comes, and watches it for Open MPI's report of
// the rank whose failure ended the job, so that the task's end can name
// that rank's replica, task and node.
type mpiWatch struct {
	layout mpi.Layout
	seen   mpi.Watcher
	*teePipe
}

// watchMPI starts watching when the job type asked for it (an MPI
// launcher: ex.Env names the rank layout); nil otherwise.
func watchMPI(ex plugin.Exec, log *slog.Logger) (*mpiWatch, error) {
	path := ex.Env[mpi.RanksEnv]
	if path == "" || len(ex.Argv) == 0 {
		return nil, nil
	}
	l, err := mpi.ReadLayout(path)
	if err != nil { // the failed rank is still named, without its replica
		log.Warn("an MPI failure will not name the rank's replica", "err", err)
	}
	return newMPIWatch(l, os.Stderr)
}

// newMPIWatch passes what mpirun writes on to out.
func newMPIWatch(l mpi.Layout, out io.Writer) (*mpiWatch, error) {
	m := &mpiWatch{layout: l}
	p, err := newTeePipe(out, &m.seen)
	if err != nil {
		return nil, fmt.Errorf("a pipe for mpirun's stderr: %w", err)
	}
	m.teePipe = p
	return m, nil
}

// explain waits (at most drainFor) for the rest of mpirun's stderr and
// says which rank failed, where; "" when Open MPI reported none.
func (m *mpiWatch) explain() string {
	t := time.NewTimer(drainFor)
	defer t.Stop()
	m.drain(t.C)
	f, ok := m.seen.Failure()
	if !ok {
		return ""
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".") // Open MPI names nodes without their domain
	return m.layout.Explain(f, host)
}
