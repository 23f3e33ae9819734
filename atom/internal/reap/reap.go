// Package reap waits for every child of atom when it runs as PID 1 (or as
// a child subreaper), so orphaned grandchildren do not linger as zombies.
//
// It follows hashicorp/go-reap's idea of a lock shared with the code that
// waits for its own child, turned around so the reaper never steals that
// child's exit status: the reaper is the only waiter. Start forks the job
// and records its pid under the same lock the reaper holds around each
// wait4(-1), so the reaper cannot reap the pid before it is recorded; the
// reaper hands a recorded pid's status to Start's channel and drops every
// other child's.
package reap

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// Reaper reaps every child on SIGCHLD. The zero value is not usable; call
// New.
type Reaper struct {
	mu      sync.Mutex                      // held around Start+record and each wait4
	watched map[int]chan syscall.WaitStatus // guarded by mu
	sigs    chan os.Signal
	done    chan struct{}
	wg      sync.WaitGroup
}

// New starts a reaper. Call Close when done.
func New() *Reaper {
	r := &Reaper{watched: map[int]chan syscall.WaitStatus{}, sigs: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	r.wg.Add(1)
	go r.loop()
	return r
}

// Start starts cmd and returns a channel that receives its wait status
// once it exits. Do not call cmd.Wait: the reaper waits for it.
func (r *Reaper) Start(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := make(chan syscall.WaitStatus, 1)
	r.watched[cmd.Process.Pid] = c
	return c, nil
}

// Close stops reaping.
func (r *Reaper) Close() {
	signal.Stop(r.sigs)
	close(r.done)
	r.wg.Wait()
}

func (r *Reaper) loop() {
	defer r.wg.Done()
	for {
		r.reapAll()
		select {
		case <-r.done:
			return
		case <-r.sigs:
		}
	}
}

// reapAll waits for every exited child without blocking.
func (r *Reaper) reapAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return // ECHILD: no children; 0: none exited yet
		}
		if c, ok := r.watched[pid]; ok {
			delete(r.watched, pid)
			c <- ws
		}
	}
}
