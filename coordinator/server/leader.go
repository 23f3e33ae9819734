package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Leadership, as in Nomad's leader.go:
//
//	LeaderCh true ──▶ leaderLoop: Barrier (retry) ──▶ start leader work:
//	                      scheduleLoop, liveness (reaper + flusher), retentionLoop,
//	                      what AddLeaderWork registered (the Kubernetes Node sync)
//	LeaderCh false ──▶ cancel the work's context, wait for it to stop
//
// The Barrier makes the FSM apply every entry of earlier terms before the
// leader reads it, so its first plan is made on the whole state.

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

// leaderState is what one term of leadership keeps in memory.
type leaderState struct {
	// started and stopped record what this term told the backend; a new
	// leader starts empty and repeats every stop (the backend is
	// idempotent). Keys carry the allocation token because a replaced
	// service replica keeps its task ID. Scheduling loop only.
	started map[allocKey]bool
	stopped map[allocKey]bool
	// inherited are the tasks that were Scheduled when this term began
	// and that another server (or an earlier run of this one) placed.
	// This term never starts them, unless the backend adopts them
	// (Adopter: Kubernetes Pods, which every server sees): the leader that placed them may have
	// started them on its own backend just before it went (a local
	// process this server cannot see), and starting one again would run
	// the allocation twice. A started one heartbeats (Running); one that
	// never started stays silent, is declared Lost after the heartbeat
	// TTL and is placed again as a new allocation (state: a task lost
	// before it ran requeues its job without using its restarts). So a
	// task is only ever started by the server process that placed it.
	inherited map[allocKey]bool
	// caches are the clusters' dataset caches as this term sees them.
	caches *caches
}

// allocKey names one allocation: a task ID and the token it was placed
// with.
type allocKey struct {
	id    structs.TaskID
	token string
}

// leaderLoop runs leader-only work until ctx ends.
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

	// 2. Start liveness first: every task gets a full TTL from now (C20).
	// The tasks placed before this term that have not reported yet are
	// not this term's to start (leaderState.inherited).
	live := newLiveness(s, s.now())
	inherited := map[allocKey]bool{}
	s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			// A task waiting for a cache warm-up was never started: the
			// warm-up's end applies before its leader starts it.
			if k := (allocKey{id: id, token: st.Tokens[id]}); t.State == structs.TaskScheduled && !s.placedHere(k) && !st.Warming(t) {
				inherited[k] = true
			}
		}
	})
	s.mu.Lock()
	s.live = live
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.live, s.why = nil, nil
		s.mu.Unlock()
		s.metrics.pending.Set(0)
	}()
	s.log.Info("leader work started")

	// 3. Run the work until leadership ends.
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	run(live.reap)
	run(live.flush)
	run(s.retentionLoop)
	run(func(ctx context.Context) { s.scheduleLoop(ctx, inherited) })
	s.extra.begin(ctx, &wg)
	wg.Wait()
	s.log.Info("leader work stopped")
}

// minCycleGap is the least time between two scheduling cycles: a burst of
// submissions wakes the loop once, not once per job.
func (s *Server) minCycleGap() time.Duration { return s.cfg.Cycle / 2 }

// scheduleLoop runs a scheduling cycle every Cycle, or sooner when woken.
func (s *Server) scheduleLoop(ctx context.Context, inherited map[allocKey]bool) {
	ls := &leaderState{started: map[allocKey]bool{}, stopped: map[allocKey]bool{}, inherited: inherited, caches: newCaches(s)}
	s.mu.Lock()
	s.warming = map[warmKey]*warmRun{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for _, r := range s.warming {
			r.cancel()
		}
		s.warming = nil
		s.mu.Unlock()
		ls.caches.close()
		s.forgetWarming()
	}()
	tick := time.NewTicker(s.cfg.Cycle)
	defer tick.Stop()
	var last time.Time
	for {
		if gap := s.minCycleGap() - time.Since(last); gap > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
		}
		last = time.Now()
		if err := s.cycle(ctx, ls); err != nil && ctx.Err() == nil {
			s.log.Warn("scheduling cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wakeCh:
		}
	}
}

// cycle is one scheduling cycle:
//  1. snapshot the state and the pending jobs;
//  2. run the pure core over them; keep its why-pending reasons;
//  3. commit the plan, if it changes anything, with fresh tokens;
//  4. drive the backend: start new tasks, stop stopping ones.
func (s *Server) cycle(ctx context.Context, ls *leaderState) error {
	s.cycleMu.Lock()
	defer s.cycleMu.Unlock()
	s.mu.Lock()
	paused, draining := s.paused, s.draining
	s.mu.Unlock()
	if draining {
		return nil
	}
	if !paused {
		if err := s.scheduleOnce(ctx, ls); err != nil {
			return err
		}
	}
	s.driveWarmUps(ctx, ls)
	s.driveBackend(ls)
	return nil
}

func (s *Server) scheduleOnce(ctx context.Context, ls *leaderState) error {
	// 1. Snapshot.
	var (
		snap    *sched.Snapshot
		pending []*structs.Job
	)
	var view *state.State
	s.fsm.Read(func(st *state.State) { view = st.Clone() }) // short: applies wait on this lock
	snap, pending = view.Snapshot(), view.Pending()
	s.metrics.pending.Set(float64(len(pending)))
	if len(pending) == 0 && len(snap.Reservations) == 0 {
		s.setWhy(nil)
		return nil
	}

	snap.Cache = ls.caches.presence(ctx, view, pending)
	snap.Volumes = s.claimsFor(pending)

	// 2. Decide.
	now := s.now()
	start := time.Now()
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: snap.Index})
	s.metrics.schedule.Observe(time.Since(start).Seconds())
	s.setWhy(plan.Pending)
	plan.Pending = nil
	if len(plan.Placements) == 0 && len(plan.Preemptions) == 0 && len(plan.Timeouts) == 0 &&
		sameReservations(plan.Reservations, snap.Reservations) {
		return nil
	}

	// 3. Commit.
	start = time.Now()
	cr, err := s.commitPlan(ctx, plan, snap, now)
	if err != nil {
		return err
	}
	s.metrics.planCommit.Observe(time.Since(start).Seconds())
	s.metrics.placements.Add(float64(len(cr.Placed)))
	s.metrics.rejected.Add(float64(len(cr.Rejected)))
	if len(cr.Placed) > 0 || len(cr.Rejected) > 0 || len(plan.Preemptions) > 0 || len(plan.Timeouts) > 0 {
		s.log.Debug("plan committed", "index", snap.Index, "placed", len(cr.Placed), "rejected", len(cr.Rejected),
			"preemptions", len(plan.Preemptions), "timeouts", len(plan.Timeouts), "took", time.Since(start))
	}
	for _, r := range cr.Rejected {
		s.log.Debug("placement rejected at commit", "job", r.Job, "reason", r.Reason)
	}
	return nil
}

// planChunkTasks bounds the tasks one PlanCommit log entry places. A big
// plan (a backlog of thousands of jobs) becomes several entries, handed to
// Raft back to back so they replicate as a pipeline, and no single entry
// stalls the servers' apply loops (which would delay Raft heartbeats).
const planChunkTasks = 2048

// commitPlan commits plan as one or more PlanCommit entries and merges
// their results.
func (s *Server) commitPlan(ctx context.Context, plan *sched.Plan, snap *sched.Snapshot, now time.Time) (state.CommitResult, error) {
	var (
		res  state.CommitResult
		errs []error
		ps   []*pending
	)
	for _, chunk := range splitPlan(plan, planChunkTasks) {
		tokens, err := newTokens(chunk, snap)
		if err != nil {
			errs = append(errs, err)
			break
		}
		s.notePlaced(tokens)
		p, err := s.start(ctx, &state.PlanCommit{Plan: chunk, Now: now, Tokens: tokens})
		if err != nil {
			errs = append(errs, err)
			break
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		r, err := p.wait(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cr, _ := r.(state.CommitResult)
		res.Placed = append(res.Placed, cr.Placed...)
		res.Rejected = append(res.Rejected, cr.Rejected...)
	}
	return res, errors.Join(errs...)
}

// splitPlan cuts plan into plans of at most maxTasks placed tasks (a
// placement, being a whole gang, is never cut). Applied in order they do
// what plan does: every chunk carries the complete reservation set, and
// the last one the preemptions and timeouts, which a single PlanCommit
// applies after its placements.
func splitPlan(plan *sched.Plan, maxTasks int) []*sched.Plan {
	var out []*sched.Plan
	cur := &sched.Plan{Index: plan.Index, Reservations: plan.Reservations}
	n := 0
	for _, pl := range plan.Placements {
		if n > 0 && n+len(pl.Tasks) > maxTasks {
			out = append(out, cur)
			cur = &sched.Plan{Index: plan.Index, Reservations: plan.Reservations}
			n = 0
		}
		cur.Placements = append(cur.Placements, pl)
		n += len(pl.Tasks)
	}
	cur.Preemptions, cur.Timeouts = plan.Preemptions, plan.Timeouts
	return append(out, cur)
}

// newTokens names every task plan creates (job, replica index and a
// random suffix, so a replica placed again is a new task) and makes its
// random allocation token. It fills in the plan's task IDs.
func newTokens(plan *sched.Plan, _ *sched.Snapshot) (map[structs.TaskID]string, error) {
	n := 0
	for _, pl := range plan.Placements {
		n += len(pl.Tasks)
	}
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, 18*n)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("make allocation tokens: %w", err)
	}
	tokens := make(map[structs.TaskID]string, n)
	for i := range plan.Placements {
		pl := &plan.Placements[i]
		for k := range pl.Tasks {
			tp := &pl.Tasks[k]
			tp.ID = structs.NewTaskID(pl.Job, tp.Index, hex.EncodeToString(buf[16:18]))
			tokens[tp.ID] = hex.EncodeToString(buf[:16])
			buf = buf[18:]
		}
	}
	return tokens, nil
}

func (s *Server) setWhy(why map[structs.JobID]*sched.Why) {
	s.mu.Lock()
	s.why = why
	s.mu.Unlock()
}

// driveBackend starts the Scheduled tasks this term placed (and those
// it inherited that the backend adopts) and stops the Stopping tasks, those it has not handled yet. A failed Start or Stop is
// retried next cycle; a task that never starts is Lost after the
// heartbeat TTL.
func (s *Server) driveBackend(ls *leaderState) {
	s.mu.Lock()
	b := s.backend
	s.mu.Unlock()
	if b == nil {
		return
	}
	type start struct {
		t *structs.Task
		j *structs.Job
		k allocKey
	}
	var starts []start
	var stops []allocKey
	seen := make(map[allocKey]bool, len(ls.started)+len(ls.stopped))
	s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			k := allocKey{id: id, token: st.Tokens[id]}
			switch t.State {
			case structs.TaskScheduled:
				seen[k] = true
				if !ls.started[k] && !st.Warming(t) {
					starts = append(starts, start{t: t, j: st.Jobs[t.Job], k: k})
				}
			case structs.TaskStopping:
				seen[k] = true
				// A preempted task's notice runs first: its atom sends
				// SIGTERM when it ends, the backend only after.
				if !ls.stopped[k] && !s.now().Before(t.NoticeUntil) {
					stops = append(stops, k)
				}
			}
		}
	})
	// Asked outside the state's lock, as every Backend call: a backend
	// may read the state (the daemon's router does), and a read nested
	// in another waits behind a Raft apply queued between them, which
	// waits for the outer read: the leader deadlocked.
	starts = slices.DeleteFunc(starts, func(st start) bool { return ls.inherited[st.k] && !adopts(b, st.t) })
	// Forget allocations that have moved on, so the maps stay small.
	for _, m := range []map[allocKey]bool{ls.started, ls.stopped, ls.inherited} {
		maps.DeleteFunc(m, func(k allocKey, _ bool) bool { return !seen[k] })
	}
	s.forgetPlaced(seen)
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.k.id, b.k.id) })
	slices.SortFunc(stops, func(a, b allocKey) int { return cmp.Compare(a.id, b.id) })
	stopped := onBackend(len(stops), func(i int) bool {
		if err := b.Stop(stops[i].id, s.cfg.StopGrace); err != nil {
			s.log.Warn("backend stop failed", "task", stops[i].id, "err", err)
			return false
		}
		return true
	})
	for i, ok := range stopped {
		if ok {
			ls.stopped[stops[i]] = true
		}
	}
	started := onBackend(len(starts), func(i int) bool {
		st := starts[i]
		if st.j == nil {
			return false
		}
		if err := b.Start(st.t, st.j, st.k.token); errors.Is(err, ErrBackendClosed) {
			s.log.Debug("backend start refused", "task", st.k.id, "err", err)
			return false
		} else if err != nil {
			s.log.Warn("backend start failed", "task", st.k.id, "err", err)
			return false
		}
		return true
	})
	for i, ok := range started {
		if ok {
			ls.started[starts[i].k] = true
		}
	}
}

// adopts reports whether backend b may start task t, which another server
// placed (Adopter).
func adopts(b Backend, t *structs.Task) bool {
	a, ok := b.(Adopter)
	return ok && a.Adopts(t)
}

// backendParallelism is how many Starts (or Stops) the leader has the
// backend run at once: a Kubernetes backend spends a few API round trips
// on each, which one at a time would make placing 1,000 tasks take tens of
// seconds. Backends are safe for concurrent use.
const backendParallelism = 64

// onBackend runs fn(i) for i in [0, n), up to backendParallelism at once,
// in order of i when n is 1, and returns what each returned.
func onBackend(n int, fn func(i int) bool) []bool {
	ok := make([]bool, n)
	if n == 1 {
		ok[0] = fn(0)
		return ok
	}
	sem := make(chan struct{}, backendParallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok[i] = fn(i)
		}()
	}
	wg.Wait()
	return ok
}

// sameReservations reports whether a plan keeps the reservations as they
// are (then it need not be committed).
func sameReservations(a, b []sched.Reservation) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// retentionLoop removes jobs that ended more than Retention ago.
func (s *Server) retentionLoop(ctx context.Context) {
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

// notePlaced records the allocations this server process is about to
// commit: it may start them in any term (leaderState.inherited).
func (s *Server) notePlaced(tokens map[structs.TaskID]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.placed == nil {
		s.placed = map[allocKey]time.Time{}
	}
	now := time.Now()
	for id, tok := range tokens {
		s.placed[allocKey{id: id, token: tok}] = now
	}
}

// forgetWarming runs when a term ends: the tasks still waiting for a
// warm-up are the next leader's, which runs the warm-up again and starts
// them. This process forgets it placed them, so that, leading again once
// another has ended the warm-up (and may have started them), it counts
// them as inherited and does not start them a second time.
func (s *Server) forgetWarming() {
	var keys []allocKey
	s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			if st.Warming(t) {
				keys = append(keys, allocKey{id: id, token: st.Tokens[id]})
			}
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.placed, k)
	}
}

// placedHere reports whether this server process placed allocation k.
func (s *Server) placedHere(k allocKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.placed[k]
	return ok
}

// forgetPlaced drops the placed allocations that are no longer Scheduled
// or Stopping (in seen); one not in the state yet (its commit still in
// flight) is kept for a heartbeat TTL.
func (s *Server) forgetPlaced(seen map[allocKey]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := time.Now().Add(-s.cfg.HeartbeatTTL)
	maps.DeleteFunc(s.placed, func(k allocKey, at time.Time) bool { return !seen[k] && at.Before(old) })
}
