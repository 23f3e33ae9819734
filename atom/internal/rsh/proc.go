package rsh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one launched command: /bin/sh -c LINE, leader of its own
// process group, with its stdout and stderr on pipes.
type proc struct {
	pid            int
	stdout, stderr *os.File // read ends
	exited         chan struct{}
	exit           Exit // set before exited is closed
	// clientGone: the client went away while the command ran, and the
	// command was stopped for it (set before stream returns).
	clientGone bool

	killOnce sync.Once
}

func startProc(st Starter, line string, env []string, dir string) (*proc, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	status, err := st.Start(cmd)
	outW.Close() // the child holds its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start /bin/sh -c %q: %w", line, err)
	}
	p := &proc{pid: cmd.Process.Pid, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go func() {
		p.exit = exitOf(<-status)
		close(p.exited)
	}()
	return p, nil
}

// stream copies the command's output to fw as frames until it has exited
// and its output is drained, then sends the exit frame. When ctx ends
// (the client went away) or a frame cannot be written, the command is
// killed with grace.
func (p *proc) stream(ctx context.Context, fw *frameWriter, grace, drain time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var copies sync.WaitGroup
	for _, c := range []struct {
		f    *os.File
		kind byte
	}{{p.stdout, FrameStdout}, {p.stderr, FrameStderr}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.f.Read(buf)
				if n > 0 && fw.frame(c.kind, buf[:n]) != nil {
					cancel() // the client is gone
				}
				if err != nil {
					return
				}
			}
		}()
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.clientGone = true
		p.kill(grace)
	}
	// Output written before the exit is in the pipes; a background process
	// may keep them open, so read for at most drain more.
	deadline := time.Now().Add(drain)
	_ = p.stdout.SetReadDeadline(deadline)
	_ = p.stderr.SetReadDeadline(deadline)
	copies.Wait()
	p.stdout.Close()
	p.stderr.Close()
	b, _ := json.Marshal(p.exit)
	_ = fw.frame(FrameExit, b)
}

// kill sends SIGTERM to the process group, then SIGKILL if the command
// has not exited after grace, and returns once it has exited. Only the
// first call signals; later ones wait.
func (p *proc) kill(grace time.Duration) {
	p.killOnce.Do(func() {
		p.signal(syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			p.signal(syscall.SIGKILL)
		}
	})
	<-p.exited
}

// signal signals the process group while its leader has not been reaped
// (after that the group ID may name another group).
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(p.pid, sig)
	}
}

// exitOf is ws as a shell reports it.
func exitOf(ws syscall.WaitStatus) Exit {
	if ws.Signaled() {
		return Exit{ExitCode: 128 + int(ws.Signal()), Signal: ws.Signal().String()}
	}
	return Exit{ExitCode: ws.ExitStatus()}
}
