package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/atom-sched/atom/plugins/spark"
)

// teePipe passes what a job writes to one of its output streams on to
// atom's own, unchanged and as it comes (no line buffering, no delay),
// and a copy to seen, which watches it for why the job failed.
type teePipe struct {
	out, seen io.Writer
	r, w      *os.File // the pipe: the job writes w, atom reads r
	done      chan struct{}
}

// newTeePipe starts passing what is written to its w on to out and seen.
func newTeePipe(out, seen io.Writer) (*teePipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("a pipe for the job's output: %w", err)
	}
	p := &teePipe{out: out, seen: seen, r: r, w: w, done: make(chan struct{})}
	go p.copy()
	return p, nil
}

// copy passes each read on at once.
func (p *teePipe) copy() {
	defer close(p.done)
	defer p.r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			_, _ = p.out.Write(buf[:n])
			_, _ = p.seen.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// started drops atom's copy of the write end once the job has its own
// (or failed to start), so the pipe ends when the job and its children do.
func (p *teePipe) started() { _ = p.w.Close() }

// drain waits until all of the job's output is passed on, or until
// the timer fires (a process left behind may hold the pipe).
func (p *teePipe) drain(t <-chan time.Time) bool {
	select {
	case <-p.done:
		return true
	case <-t:
		return false
	}
}

// sparkWatch watches a Spark driver's stdout and stderr for the line
// that says why it failed (spark.ErrorLine): PySpark's tracebacks come on
// stdout, the JVM's on stderr.
type sparkWatch struct {
	lines          spark.ErrorLine
	stdout, stderr *teePipe
}

// watchSpark starts watching a spark job's driver, whose output goes on
// to stdout and stderr.
func watchSpark(stdout, stderr io.Writer) (*sparkWatch, error) {
	s := &sparkWatch{}
	var err error
	if s.stdout, err = newTeePipe(stdout, s.lines.Stream()); err != nil {
		return nil, err
	}
	if s.stderr, err = newTeePipe(stderr, s.lines.Stream()); err != nil {
		s.stdout.started()
		return nil, err
	}
	return s, nil
}

// started: the driver holds both write ends now (or failed to start).
func (s *sparkWatch) started() {
	s.stdout.started()
	s.stderr.started()
}

// explain waits (at most drainFor) for the rest of the driver's output
// and returns its error line; "" when it printed none.
func (s *sparkWatch) explain() string {
	t := time.NewTimer(drainFor)
	defer t.Stop()
	if s.stdout.drain(t.C) {
		s.stderr.drain(t.C)
	}
	return s.lines.Reason()
}
