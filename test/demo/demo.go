// Package demo is `make demo`: atom's main job end to end, narrated. It
// starts three `coordinator server` processes on loopback with a local
// cluster of simulated nodes (A100 and V100 GPU nodes, CPU nodes, the
// public pool and the project pool "perception"), and then drives them as
// people would, with the real `coordinator` CLI:
//
//  1. an admin sets quotas for alice, bob and project perception;
//  2. alice submits an MPI job (real mpirun across two replicas), bob a
//     two-replica web service (the demo fetches a page from each
//     replica), alice a low-priority job that fills the idle A100s;
//  3. alice submits a normal job that needs those GPUs: the low job is
//     preempted and requeued, the normal job runs;
//  4. bob submits a job no node can take (it waits, and says why) and one
//     over his quota (refused with asked, used and limit);
//  5. the leader server is killed with kill -9: the jobs carry on, and
//     the rest goes through the new leader;
//  6. the job table, the MPI job's output and every job's final state,
//     then everything is shut down.
//
// Each step checks its outcome through pkg/client; Run returns an
// error naming the first step that did not happen as narrated. Whatever
// happens (a failure, a cancelled context), Run cancels the jobs, stops
// the servers and leaves no process behind.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config says where the demo finds its programs and works.
type Config struct {
	// BinDir holds coordinator, atom (beside it, so tasks run under atom)
	// and atom-demo-web (./test/demo/web), built from this module.
	BinDir string
	// WorkDir receives the specs, the servers' data and the MPI program;
	// created if missing. Keep it short: Unix socket paths live below it.
	WorkDir string
	// SrcDir is the module's root, where atom/testdata/allreduce.c is;
	// default: found upwards from the working directory.
	SrcDir string
	// Out receives the narration.
	Out io.Writer
	// HeartbeatTTL and Cycle are the servers' --heartbeat-ttl and --cycle;
	// default 3s and 100ms.
	HeartbeatTTL, Cycle time.Duration
	// Wait bounds each wait for something to happen; default 90s.
	Wait time.Duration
}

// StepError is a step that did not happen as narrated.
type StepError struct {
	Step  int // 0: the cluster did not start
	Title string
	Err   error
}

func (e *StepError) Error() string {
	if e.Step == 0 {
		return fmt.Sprintf("starting the cluster failed: %v", e.Err)
	}
	return fmt.Sprintf("step %d (%s) did not happen as narrated: %v", e.Step, e.Title, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Steps are the demo's steps, as Run numbers them.
var Steps = []string{
	"start three coordinator servers and a local cluster",
	"quotas for two users and a project",
	"an MPI job, a web service and a low-priority job that fills idle GPUs",
	"a normal job preempts the low-priority job",
	"a job that cannot fit waits and says why; a job over quota is refused",
	"the leader is killed; everything carries on",
	"the job table, the MPI job's output, final states; shut down",
}

// Run plays the scenario and returns nil when every step happened as
// narrated. It cleans up before returning, whatever happened.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.HeartbeatTTL <= 0 {
		cfg.HeartbeatTTL = 3 * time.Second
	}
	if cfg.Cycle <= 0 {
		cfg.Cycle = 100 * time.Millisecond
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 90 * time.Second
	}
	if cfg.SrcDir == "" {
		if cfg.SrcDir, err = moduleRoot(); err != nil {
			return &StepError{Err: err}
		}
	}
	if cfg.BinDir, err = filepath.Abs(cfg.BinDir); err != nil {
		return &StepError{Err: err}
	}
	for _, p := range []string{"coordinator", "atom", "atom-demo-web"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, p)); err != nil {
			return &StepError{Err: fmt.Errorf("%s is missing from %s: build it first (make demo does)", p, cfg.BinDir)}
		}
	}
	if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
		return &StepError{Err: err}
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return &StepError{Err: err}
	}
	d := &demo{cfg: cfg, out: cfg.Out, start: time.Now(), jobs: map[string]string{}, done: -1, failed: -1}
	defer func() {
		// Whatever happened: cancel what runs, stop the servers, sweep.
		switch cerr := d.shutdown(); {
		case cerr == nil:
		case err == nil:
			d.failed = len(Steps) - 1
			err = &StepError{Step: d.failed, Title: Steps[d.failed], Err: cerr}
		default:
			err = fmt.Errorf("%w; and shutting down: %v", err, cerr)
		}
		d.summary(err)
	}()
	steps := []func(context.Context) error{d.startCluster, d.quotas, d.submitJobs, d.preempt, d.refusedAndPending, d.killLeader, d.finish}
	for i, step := range steps {
		d.header(i)
		if err := step(ctx); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("interrupted: %w", ctx.Err())
			}
			d.failed = i
			return &StepError{Step: i, Title: Steps[i], Err: err}
		}
		d.done = i
	}
	return nil
}

// moduleRoot finds the directory holding go.mod upwards from the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the module root (go.mod): set Config.SrcDir")
		}
		dir = parent
	}
}

// header prints a step's title.
func (d *demo) header(i int) {
	fmt.Fprintf(d.out, "\n==> %d. %s  [%s]\n", i, capital(Steps[i]), d.elapsed())
}

func (d *demo) elapsed() string {
	return time.Since(d.start).Truncate(100 * time.Millisecond).String()
}

func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// say prints a narration line.
func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "# "+format+"\n", args...)
}

// ok prints a check that passed.
func (d *demo) ok(format string, args ...any) {
	fmt.Fprintf(d.out, "   ok: "+format+"\n", args...)
}

// summary prints which steps happened.
func (d *demo) summary(err error) {
	fmt.Fprintf(d.out, "\n==> Summary (%s)\n", d.elapsed())
	for i, s := range Steps {
		mark := "ok     "
		switch {
		case err != nil && i == d.failed:
			mark = "FAILED "
		case err != nil && i > d.done:
			mark = "not run"
		}
		fmt.Fprintf(d.out, "  %s %d. %s\n", mark, i, s)
	}
	if err != nil {
		fmt.Fprintf(d.out, "demo failed: %v\n", err)
		return
	}
	fmt.Fprintln(d.out, "demo passed: every step happened as narrated")
}
