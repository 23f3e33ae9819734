// Package supervise runs atom's one job process: stdio passed through,
// signals forwarded, stop with SIGTERM then SIGKILL after a grace period,
// and its exit status as a shell reports it (128+n when killed by signal n).
package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atom-sched/atom/atom/internal/reap"
)

// Child is a started job process.
type Child struct {
	cmd    *exec.Cmd
	done   chan struct{}
	status syscall.WaitStatus // set before done is closed
}

// Start starts argv with atom's stdin, stdout, stderr and env plus extra
// ("K=V"). With a reaper, the reaper waits for the process (atom is PID 1
// or a subreaper); otherwise Start's own goroutine does.
func Start(argv []string, extra []string, r *reap.Reaper) (*Child, error) {
	return StartWith(argv, extra, r, os.Stderr)
}

// StartWith is Start with the process's stderr going to stderr (a file:
// the process writes to it directly, with no copying in between).
func StartWith(argv []string, extra []string, r *reap.Reaper, stderr *os.File) (*Child, error) {
	return StartOutputs(argv, extra, r, os.Stdout, stderr)
}

// StartOutputs is Start with the process's stdout and stderr going to
// the files stdout and stderr.
func StartOutputs(argv []string, extra []string, r *reap.Reaper, stdout, stderr *os.File) (*Child, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start: no command given: atom run -- CMD [ARGS...]")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), extra...)
	c := &Child{cmd: cmd, done: make(chan struct{})}
	if r != nil {
		st, err := r.Start(cmd)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", argv[0], err)
		}
		go func() {
			c.status = <-st
			_ = cmd.Process.Release()
			close(c.done)
		}()
		return c, nil
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		_ = cmd.Wait() // a non-zero exit is an error here; the status says it
		c.status, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
		close(c.done)
	}()
	return c, nil
}

// Pid is the process ID.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the process has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Signal sends sig to the process; a process that has exited is not an
// error.
func (c *Child) Signal(sig os.Signal) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(sig); err != nil && err != os.ErrProcessDone {
		return fmt.Errorf("signal pid %d: %w", c.Pid(), err)
	}
	return nil
}

// Stop sends SIGTERM and, if the process has not exited after grace,
// SIGKILL; it returns once the process has exited.
func (c *Child) Stop(grace time.Duration) {
	_ = c.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	_ = c.Signal(syscall.SIGKILL)
	<-c.done
}

// ExitCode is the exit status as a shell reports it: the code, or 128+n
// when signal n killed the process. Valid once Done is closed.
func (c *Child) ExitCode() int {
	if c.status.Signaled() {
		return 128 + int(c.status.Signal())
	}
	return c.status.ExitStatus()
}

// Describe says how the process ended ("exit code 3", "killed by
// SIGKILL"). Valid once Done is closed.
func (c *Child) Describe() string {
	if c.status.Signaled() {
		return "killed by " + signalName(c.status.Signal())
	}
	return fmt.Sprintf("exit code %d", c.status.ExitStatus())
}

// signalName is sig's name ("SIGKILL"), or "signal N" for one without.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
