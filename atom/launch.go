package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/reap"
	"github.com/atom-sched/atom/atom/internal/rsh"
	"github.com/atom-sched/atom/pkg/structs"
)

// launchFlags say where an MPI worker's launch server listens and which
// address its launcher should use.
func launchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "launch-listen", Value: "127.0.0.1:0", EnvVars: []string{"ATOM_LAUNCH_LISTEN"}, Usage: "host:port the launch server of an MPI worker listens on (port 0: any)"},
		&cli.StringFlag{Name: "launch-advertise", EnvVars: []string{"ATOM_LAUNCH_ADVERTISE", "ATOM_POD_IP"}, Usage: "host the launcher reaches this task on (default: the listen host)"},
	}
}

// launches is an MPI worker's launch server as the job's process: it is
// done once what the launcher started here has ended.
type launches struct {
	srv      *rsh.Server
	endpoint string
	grace    time.Duration
	done     chan struct{} // closed when srv is done, or stopped
	stopOnce sync.Once
}

// serveLaunches starts the launch server, accepting tokens the coordinator
// vouches for (a live task of this task's job and attempt).
func serveLaunches(_ context.Context, c *cli.Context, a allocation, r *reap.Reaper, log *slog.Logger) (*launches, error) {
	if a.Coordinator == "" {
		return nil, fmt.Errorf("serving launches needs the coordinator to vouch for the launcher: set ATOM_COORDINATOR")
	}
	v := &rsh.PeerVerifier{Peers: rsh.Coordinators(a.Coordinator), Self: structs.TaskID(a.Task)}
	cfg := rsh.Config{Verify: v.Verify, Log: log}
	if r != nil {
		cfg.Starter = r
	}
	srv := rsh.New(cfg)
	if err := srv.Listen(c.String("launch-listen")); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(srv.Addr())
	host, _, _ := net.SplitHostPort(srv.Addr())
	if adv := c.String("launch-advertise"); adv != "" {
		host = adv
	}
	l := &launches{srv: srv, endpoint: net.JoinHostPort(host, port), grace: c.Duration("grace"), done: make(chan struct{})}
	go func() {
		<-srv.Done()
		l.finish()
	}()
	return l, nil
}

func (l *launches) finish() { l.stopOnce.Do(func() { close(l.done) }) }

func (l *launches) Endpoint() string      { return l.endpoint }
func (l *launches) Close()                { _ = l.srv.Close() }
func (l *launches) Done() <-chan struct{} { return l.done }
func (l *launches) ExitCode() int         { return l.srv.ExitCode() }
func (l *launches) Stop(grace time.Duration) {
	l.srv.Stop(grace) // returns once everything launched has ended
	l.finish()
}

// Signal: a terminating signal stops what was launched (with the grace);
// others have no single process to go to.
func (l *launches) Signal(s os.Signal) error {
	if s == syscall.SIGTERM || s == syscall.SIGINT {
		go l.Stop(l.grace)
	}
	return nil
}

func (l *launches) Describe() string {
	if l.launcherGone() {
		return fmt.Sprintf("the launcher's connection closed (mpirun or its atom rsh ended) while what it launched here ran; atom stopped that: exit status %d", l.srv.ExitCode())
	}
	return fmt.Sprintf("%d launched command(s), exit status %d", l.srv.Launched(), l.srv.ExitCode())
}

// launcherGone reports whether the task failed because the launcher went
// away: what it had started here was stopped for that.
func (l *launches) launcherGone() bool { return l.srv.ExitCode() != 0 && l.srv.ClientGone() }
