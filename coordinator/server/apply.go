package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
)

// Errors callers branch on.
var (
	// ErrNotLeader is matched by every *NotLeaderError.
	ErrNotLeader = errors.New("not the leader")
	// ErrOutcomeUnknown means the command may or may not have been
	// committed: leadership was lost or the server stopped while it was in
	// flight, or the caller stopped waiting. Retrying is safe for commands
	// that are idempotent by request ID (JobSubmit: a retried submit with the same request ID is one job).
	ErrOutcomeUnknown = errors.New("outcome unknown: retry with the same request ID")
)

// NotLeaderError is returned by writes on a server that is not the leader.
// The command was not appended to the log, so sending it to the leader is
// always safe. LeaderID and LeaderAddr (Raft address) are empty while no
// leader is known.
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "not the leader: no leader is elected yet: retry"
	}
	return fmt.Sprintf("not the leader: the leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

// Unwrap lets errors.Is match ErrNotLeader.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// NotApplied reports that the command was certainly not applied (callers
// outside this package test for the method, not the type).
func (e *NotLeaderError) NotApplied() bool { return true }

// Apply commits c through Raft and returns the command's result, or its
// domain error as the state machine returned it (errors.Is works with the
// state and sched sentinels). It must run on the leader: a follower returns
// a *NotLeaderError. Lost leadership while c is in flight, a shutdown, or
// ctx ending before the commit returns an error wrapping ErrOutcomeUnknown.
func (s *Server) Apply(ctx context.Context, c state.Command) (any, error) {
	p, err := s.start(ctx, c)
	if err != nil {
		return nil, err
	}
	return p.wait(ctx)
}

// pending is a command handed to Raft whose outcome is not known yet.
type pending struct {
	s     *Server
	name  string
	start time.Time
	f     raft.ApplyFuture
}

// start encodes c and hands it to Raft without waiting, so that a caller
// can pipeline several commands; their order in the log is the order of
// the start calls (from one goroutine).
func (s *Server) start(ctx context.Context, c state.Command) (*pending, error) {
	if s.raft.State() != raft.Leader {
		return nil, s.notLeader()
	}
	b, err := state.Encode(c)
	if err != nil {
		return nil, err
	}
	var enqueue time.Duration // 0: wait for room in Raft's queue
	if dl, ok := ctx.Deadline(); ok {
		if enqueue = time.Until(dl); enqueue <= 0 {
			return nil, ctx.Err()
		}
	}
	return &pending{s: s, name: commandName(c), start: time.Now(), f: s.raft.Apply(b, enqueue)}, nil
}

// wait returns the command's result once it is applied on this server.
func (p *pending) wait(ctx context.Context) (any, error) {
	if err := p.s.wait(ctx, p.f); err != nil {
		return nil, fmt.Errorf("apply %s: %w", p.name, p.s.mapRaftErr(err))
	}
	p.s.metrics.apply.WithLabelValues(p.name).Observe(time.Since(p.start).Seconds())
	r, ok := p.f.Response().(fsm.Response)
	if !ok {
		return nil, fmt.Errorf("apply %s: unexpected state machine response %T", p.name, p.f.Response())
	}
	return r.Result, r.Err
}

// wait waits for f, ctx or shutdown, whichever ends first. Shutdown
// matters: Raft does not answer futures still queued in its (batched)
// apply channel when it stops.
func (s *Server) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	case <-s.shutdownCh:
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, raft.ErrRaftShutdown)
	}
}

// mapRaftErr turns Raft's errors into the server's: entries that were
// never appended become a *NotLeaderError (safe to send to the leader);
// entries whose fate is unknown wrap ErrOutcomeUnknown.
func (s *Server) mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return err
}

func (s *Server) notLeader() *NotLeaderError {
	id, addr := s.Leader()
	if id == s.cfg.ID { // stepping down: the old view is all we have
		id, addr = "", ""
	}
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

// commandName is the command's type name ("JobSubmit"), for metrics and
// errors.
func commandName(c state.Command) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", c), "*state.")
}
