package server

import (
	"context"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
)

// accrueUsage is leader work: it moves fair-share usage to the leader's
// clock every UsageEvery (state.UsageAccrue). A task's exact stretch is
// counted at its placement and its end by the state machine whenever
// they come, so the period only says how fresh the figures the
// scheduler orders by are, and a new leader just carries on.
func (s *Server) accrueUsage(ctx context.Context) {
	tick := time.NewTicker(s.cfg.UsageEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := s.Apply(ctx, &state.UsageAccrue{Now: s.now()}); err != nil && ctx.Err() == nil {
			s.log.Warn("fair-share usage accrual failed", "err", err)
		}
	}
}
