package server

import (
	"context"
	"sync"
	"time"
)

// Leadership, as in Nomad's leader.go:
//
//	LeaderCh true ──▶ leaderLoop: Barrier (retry) ──▶ establish the leader
//	                  components, then run each in its goroutine:
//	                      liveness   (liveness.go: heartbeats, reaper, flusher)
//	                      backend    (backend.go: starts and stops tasks)
//	                      warm-ups   (warmup.go: dataset copies)
//	                      scheduler  (schedule.go: the cycle)
//	                      retention  (retention.go), usage accrual (usage.go)
//	                      what AddLeaderWork added (the Kubernetes Node sync)
//	LeaderCh false ──▶ cancel the term's context, wait for every run to
//	                   return, revoke the components (last first)
//
// The Barrier makes the FSM apply every entry of earlier terms before the
// leader reads it, so its first plan is made on the whole state. Each
// component keeps its own state under its own lock.

// monitorLeadership starts and stops leader work as leadership comes and
// goes, until shutdown.
func (s *Server) monitorLeadership() {
	defer s.wg.Done()
	var work *leaderWork
	defer func() { work.stop() }()
	for {
		select {
		case <-s.shutdownCh:
			return
		case leader := <-s.raft.LeaderCh():
			// Two trues in a row mean leadership was lost and regained
			// while we were busy: restart the work either way.
			work.stop()
			work = nil
			if !leader {
				s.log.Info("lost leadership")
				continue
			}
			s.log.Info("gained leadership")
			work = s.startLeaderWork()
		}
	}
}

// leaderWork is one running leaderLoop.
type leaderWork struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Server) startLeaderWork() *leaderWork {
	ctx, cancel := context.WithCancel(context.Background())
	w := &leaderWork{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		s.leaderLoop(ctx)
	}()
	return w
}

// stop cancels the work and waits for it; a nil *leaderWork is a no-op.
func (w *leaderWork) stop() {
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
}

// leaderLoop runs the leader components until ctx ends.
func (s *Server) leaderLoop(ctx context.Context) {
	// 1. Catch the FSM up with everything committed before this term.
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		// Waited for with ctx: a Barrier still queued when Raft shuts down
		// is never answered, and this loop must end for Shutdown to.
		err := s.wait(ctx, s.raft.Barrier(time.Minute))
		if err == nil {
			break
		}
		s.log.Warn("leader barrier failed", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	if ctx.Err() != nil {
		return
	}

	// 2. Establish the components, liveness first (every task gets a full
	// TTL from now, C20), and run them until leadership ends.
	var wg sync.WaitGroup
	term := s.components.begin(ctx, &wg)
	s.log.Info("leader work started")
	wg.Wait()
	term.end()
	s.log.Info("leader work stopped")
}
