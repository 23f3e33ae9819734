package server

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// Heartbeat errors.
var (
	// ErrBadToken: the task does not exist or the token is not its
	// allocation token (the two are not told apart).
	ErrBadToken = errors.New("invalid allocation token")
	// ErrTaskEnded: the task has ended (it may have been declared Lost);
	// its agent should stop it. The backends' error, so they need not
	// import the server.
	ErrTaskEnded = backend.ErrTaskEnded
)

// Heartbeat records that task taskID is alive and what its agent reports.
// Any server accepts it: a follower forwards it with the hook set by
// SetForward (or returns a *NotLeaderError without one).
//
// ev.State is "" for a plain heartbeat, Running (optionally with Healthy
// and Endpoint), or Succeeded, Failed or Lost with an exit code. The leader
// keeps last-seen times in memory and commits only changes (Running, ended,
// health flips, a new endpoint), batched into TaskUpdate commands;
// Heartbeat returns once a change is committed. ev.Task is set to taskID
// and a zero ev.Time to the leader's clock.
func (s *Server) Heartbeat(taskID structs.TaskID, token string, ev structs.TaskEvent) error {
	h := s.live
	h.mu.Lock()
	l, fwd := h.term, h.forward
	h.mu.Unlock()
	if l != nil {
		return l.heartbeat(taskID, token, ev)
	}
	id, addr := s.Leader()
	if fwd != nil && id != "" && id != s.cfg.ID {
		return fwd(id, addr, taskID, token, ev)
	}
	return s.notLeader()
}

// Report is the backends' event sink (backend.EventSink): what a backend
// sees of a task it runs goes in as that task's heartbeat, with the
// allocation token it was launched with or, for "", the task's current
// one as this server's state has it. On a follower it is forwarded to
// the leader as any heartbeat is.
func (s *Server) Report(id structs.TaskID, token string, ev structs.TaskEvent) error {
	if token == "" {
		s.fsm.Read(func(st *state.State) { token = st.Tokens[id] })
	}
	return s.Heartbeat(id, token, ev)
}

// SetForward sets how a follower forwards heartbeats to the leader.
// Without one, Heartbeat on a follower returns a *NotLeaderError.
func (s *Server) SetForward(f ForwardFunc) {
	s.live.mu.Lock()
	s.live.forward = f
	s.live.mu.Unlock()
}

// heartbeats is the leader component that keeps task liveness: a
// liveness for each term, which the other components' heartbeats (a
// backend's Start reporting a task that cannot start) reach too. It is
// established first: every task gets a full TTL from the term's start.
type heartbeats struct {
	s *Server

	mu      sync.Mutex // guards the fields below
	term    *liveness  // nil between terms
	forward ForwardFunc
}

func (h *heartbeats) establish(context.Context) {
	l := newLiveness(h.s, h.s.now())
	h.mu.Lock()
	h.term = l
	h.mu.Unlock()
}

func (h *heartbeats) run(ctx context.Context) {
	l := h.current()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.reap(ctx) }()
	l.flush(ctx)
	wg.Wait()
}

func (h *heartbeats) revoke() {
	h.mu.Lock()
	h.term = nil
	h.mu.Unlock()
}

// current returns the term's liveness, nil between terms.
func (h *heartbeats) current() *liveness {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.term
}

// liveness tracks task heartbeats for one term of leadership.
//
//	heartbeat ──▶ seen[task] = now; a change? ──▶ queued ──kick──▶ flush: TaskUpdate
//	reap (every TTL/4) ──▶ silent ≥ TTL ──▶ queued Lost event
//
// A task first seen by this term counts as seen then, so after an election
// every task gets a full TTL of grace (C20), whatever the old leader saw.
type liveness struct {
	s         *Server
	ttl       time.Duration
	electedAt time.Time     // when this term's leader work began
	kick      chan struct{} // capacity 1: wakes flush

	mu       sync.Mutex // guards the fields below
	seen     map[structs.TaskID]lastSeen
	queued   map[structs.TaskID]*taskEvents // next batch
	inflight map[structs.TaskID]*taskEvents // batch being committed
	closed   error                          // set when the term ended
}

// lastSeen is when an allocation was last heard from (or first seen).
// The token tells a replaced service replica, which keeps its task ID,
// from the one before.
type lastSeen struct {
	at    time.Time
	token string
}

// taskEvents are one task's events in a batch and the heartbeats waiting
// for them to commit.
type taskEvents struct {
	events  []structs.TaskEvent
	waiters []chan error
}

func newLiveness(s *Server, electedAt time.Time) *liveness {
	l := &liveness{
		s:         s,
		ttl:       s.cfg.HeartbeatTTL,
		electedAt: electedAt,
		kick:      make(chan struct{}, 1),
		seen:      map[structs.TaskID]lastSeen{},
		queued:    map[structs.TaskID]*taskEvents{},
	}
	s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			if t.State.HoldsResources() {
				l.seen[id] = lastSeen{at: electedAt, token: st.Tokens[id]}
			}
		}
	})
	return l
}

func (l *liveness) heartbeat(id structs.TaskID, token string, ev structs.TaskEvent) error {
	switch ev.State {
	case "", structs.TaskRunning, structs.TaskSucceeded, structs.TaskFailed, structs.TaskLost:
	default:
		return fmt.Errorf("heartbeat for task %s: state %q is not allowed: use Running, Succeeded, Failed or Lost: %w", id, ev.State, state.ErrInvalid)
	}
	if ev.Endpoint != "" {
		if err := structs.CheckEndpoint(ev.Endpoint); err != nil {
			return fmt.Errorf("heartbeat for task %s: %v: %w", id, err, state.ErrInvalid)
		}
	}
	var (
		t    *structs.Task
		want string
	)
	l.s.fsm.Read(func(st *state.State) {
		t, want = st.Tasks[id], st.Tokens[id]
	})
	if t == nil || want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(token)) != 1 {
		return fmt.Errorf("heartbeat for task %s: %w", id, ErrBadToken)
	}
	if !t.State.HoldsResources() {
		return fmt.Errorf("heartbeat for task %s: it is %s: %w", id, t.State, ErrTaskEnded)
	}
	now := l.s.now()
	ev.Task = id
	if ev.Time.IsZero() {
		ev.Time = now
	}
	l.s.metrics.heartbeats.Inc()

	l.mu.Lock()
	if l.closed != nil {
		l.mu.Unlock()
		return fmt.Errorf("heartbeat for task %s: %w", id, l.closed)
	}
	l.seen[id] = lastSeen{at: now, token: want}
	var join *taskEvents // a batch to wait for
	if l.changes(t, ev) {
		join = l.queued[id]
		if join == nil {
			join = &taskEvents{}
			l.queued[id] = join
		}
		join.events = append(join.events, ev)
	} else if ev.State != "" {
		// Nothing new, but an earlier change may still be committing:
		// answer once it has.
		if join = l.queued[id]; join == nil {
			join = l.inflight[id]
		}
	}
	if join == nil {
		l.mu.Unlock()
		return nil
	}
	done := make(chan error, 1)
	join.waiters = append(join.waiters, done)
	l.mu.Unlock()
	l.wakeFlush()
	return <-done
}

// changes reports whether ev changes task t, given the events already in
// flight or queued for it. Guarded by mu.
func (l *liveness) changes(t *structs.Task, ev structs.TaskEvent) bool {
	st, healthy, endpoint, ended := t.State, t.Healthy, t.Endpoint, false
	for _, b := range []*taskEvents{l.inflight[t.ID], l.queued[t.ID]} {
		if b == nil {
			continue
		}
		for _, e := range b.events {
			if e.State != structs.TaskRunning {
				ended = true
				continue
			}
			if st == structs.TaskScheduled {
				st = structs.TaskRunning
			}
			if e.Healthy != nil {
				healthy = *e.Healthy
			}
			if e.Endpoint != "" {
				endpoint = e.Endpoint
			}
		}
	}
	switch {
	case ended || ev.State == "":
		return false
	case ev.State == structs.TaskRunning:
		return st == structs.TaskScheduled || (ev.Healthy != nil && *ev.Healthy != healthy) ||
			(ev.Endpoint != "" && ev.Endpoint != endpoint)
	}
	return true // the task ended
}

// ending reports whether an end event is queued or in flight for id.
// Guarded by mu.
func (l *liveness) ending(id structs.TaskID) bool {
	for _, b := range []*taskEvents{l.inflight[id], l.queued[id]} {
		if b == nil {
			continue
		}
		for _, e := range b.events {
			if e.State != structs.TaskRunning {
				return true
			}
		}
	}
	return false
}

func (l *liveness) wakeFlush() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// flush commits queued events as one TaskUpdate at a time (group commit:
// what arrives while one batch commits goes into the next) until ctx ends.
// Then it ends the term's heartbeats (fail): nothing commits them any
// more, and a heartbeat from other leader work (a backend's Start
// reporting a task that cannot start) must not wait for that work to stop.
func (l *liveness) flush(ctx context.Context) {
	defer l.fail(ErrOutcomeUnknown)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.mu.Lock()
		batch := l.queued
		l.queued, l.inflight = map[structs.TaskID]*taskEvents{}, batch
		l.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		var events []structs.TaskEvent
		for _, id := range slices.Sorted(maps.Keys(batch)) {
			events = append(events, batch[id].events...)
		}
		_, err := l.s.Apply(ctx, &state.TaskUpdate{Events: events})
		if err != nil && ctx.Err() == nil {
			l.s.log.Warn("commit task events failed", "events", len(events), "err", err)
		}
		l.mu.Lock()
		l.inflight = nil
		l.mu.Unlock()
		for _, b := range batch {
			for _, w := range b.waiters {
				w <- err
			}
		}
	}
}

// reap declares Lost every task silent for a TTL, until ctx ends.
func (l *liveness) reap(ctx context.Context) {
	tick := time.NewTicker(min(max(l.ttl/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l.reapOnce()
	}
}

func (l *liveness) reapOnce() {
	var live []allocKey
	warming := map[structs.TaskID]bool{} // the leader holds them back: not silent
	l.s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			if t.State.HoldsResources() {
				live = append(live, allocKey{id: id, token: st.Tokens[id]})
				if st.Warming(t) {
					warming[id] = true
				}
			}
		}
	})
	now := l.s.now()
	slices.SortFunc(live, func(a, b allocKey) int { return cmp.Compare(a.id, b.id) })
	var lost []structs.TaskID
	l.mu.Lock()
	seen := make(map[structs.TaskID]lastSeen, len(live))
	for _, k := range live {
		last, ok := l.seen[k.id]
		if !ok || last.token != k.token || warming[k.id] {
			last = lastSeen{at: now, token: k.token} // first sight (or held back): a full TTL from now
		}
		if now.Sub(last.at) >= l.ttl && !l.ending(k.id) {
			b := l.queued[k.id]
			if b == nil {
				b = &taskEvents{}
				l.queued[k.id] = b
			}
			b.events = append(b.events, structs.TaskEvent{
				Task: k.id, State: structs.TaskLost, Time: now,
				Message: fmt.Sprintf("no heartbeat for %s", now.Sub(last.at).Round(time.Millisecond)),
			})
			lost = append(lost, k.id)
			last.at = now
		}
		seen[k.id] = last
	}
	l.seen = seen
	l.mu.Unlock()
	if len(lost) > 0 {
		l.s.metrics.lost.Add(float64(len(lost)))
		l.s.log.Info("tasks lost: no heartbeat within the TTL", "tasks", len(lost), "ttl", l.ttl, "first", lost[0])
		l.wakeFlush()
	}
}

// fail ends the term: waiting and later heartbeats get err.
func (l *liveness) fail(err error) {
	l.mu.Lock()
	l.closed = err
	var waiters []chan error
	for _, m := range []map[structs.TaskID]*taskEvents{l.queued, l.inflight} {
		for _, b := range m {
			waiters = append(waiters, b.waiters...)
			b.waiters = nil
		}
	}
	l.queued, l.inflight = map[structs.TaskID]*taskEvents{}, nil
	l.mu.Unlock()
	for _, w := range waiters {
		w <- err
	}
}
