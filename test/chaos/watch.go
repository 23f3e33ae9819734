package chaos

import (
	"context"
	"sync"
	"time"
)

// watcher polls the servers for the leader every period and measures how
// long the cluster goes without one. A cut-off server that still thinks it
// leads does not count: it cannot commit.
type watcher struct {
	c      *cluster
	period time.Duration

	mu            sync.Mutex
	leader        string    // the leader seen last; "" while there is none
	lostAt        time.Time // when the cluster lost its leader; zero while it has one
	maxLeaderless time.Duration
	worstAt       time.Time // when the longest leaderless window began
	changes       int       // a leader different from the one before
	polls         int
}

func newWatcher(c *cluster, period time.Duration) *watcher {
	return &watcher{c: c, period: period}
}

func (w *watcher) run(ctx context.Context) {
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		l := w.c.leader(ctx)
		now := time.Now()
		w.mu.Lock()
		w.polls++
		switch {
		case l == nil && w.lostAt.IsZero():
			w.lostAt = now
		case l != nil:
			if !w.lostAt.IsZero() {
				w.note(now.Sub(w.lostAt), w.lostAt)
				w.lostAt = time.Time{}
			}
			if w.leader != "" && l.id != w.leader {
				w.changes++
			}
			w.leader = l.id
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *watcher) note(d time.Duration, at time.Time) {
	if d > w.maxLeaderless {
		w.maxLeaderless, w.worstAt = d, at
	}
}

// leaderLost tells the watcher that the suite has just taken the leader
// away (killed or cut it off) at t: the leaderless window starts then, not
// at the next poll.
func (w *watcher) leaderLost(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lostAt.IsZero() || t.Before(w.lostAt) {
		w.lostAt = t
	}
}

// current returns the leader seen last ("" if none).
func (w *watcher) current() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lostAt.IsZero() {
		return ""
	}
	return w.leader
}

// result returns the longest leaderless window (including one still open)
// and the number of leader changes.
func (w *watcher) result() (time.Duration, time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, at := w.maxLeaderless, w.worstAt
	if !w.lostAt.IsZero() && time.Since(w.lostAt) > m {
		m, at = time.Since(w.lostAt), w.lostAt
	}
	return m, at, w.changes
}
