package server

import (
	"context"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
)

// retention is leader work: it removes the jobs that ended more than
// Retention ago (state.JobsExpire), looking every tenth of it (between
// 100ms and an hour).
func (s *Server) retention(ctx context.Context) {
	every := min(max(s.cfg.Retention/10, 100*time.Millisecond), time.Hour)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := s.expire(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("expire ended jobs failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Server) expire(ctx context.Context) error {
	before := s.now().Add(-s.cfg.Retention)
	due := false
	s.fsm.Read(func(st *state.State) {
		for _, at := range st.Ended {
			if at.Before(before) {
				due = true
				return
			}
		}
	})
	if !due {
		return nil
	}
	res, err := s.Apply(ctx, &state.JobsExpire{Before: before})
	if err != nil {
		return err
	}
	if r, ok := res.(state.ExpireResult); ok && r.Jobs > 0 {
		s.log.Info("expired ended jobs", "jobs", r.Jobs, "endedBefore", before)
	}
	return nil
}
