package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// scheduler is the leader component that runs the scheduling cycle, every
// Cycle or sooner when woken:
//
//	one read of the state (state.ReadCycle): snapshot, pending jobs,
//	    Scheduled and Stopping allocations, warm-ups, caches
//	──▶ sched.Schedule ──▶ PlanCommit (fresh tokens) ──▶ what it changed,
//	    looked up by ID
//	──▶ warm-ups (warmup.go) ──▶ backend: start, stop (backend.go)
type scheduler struct {
	s      *Server
	wakeCh chan struct{} // capacity 1: wakes the loop

	mu       sync.Mutex // guards the fields below
	paused   bool
	draining bool                         // Drain was called: no cycle runs again
	why      map[structs.JobID]*sched.Why // latest cycle's reasons; nil between terms

	// cycleMu is held through each cycle (Drain waits on it).
	cycleMu sync.Mutex
}

func newScheduler(s *Server) *scheduler {
	return &scheduler{s: s, wakeCh: make(chan struct{}, 1)}
}

func (c *scheduler) establish(context.Context) {}

func (c *scheduler) revoke() {
	c.setWhy(nil)
	c.s.metrics.pending.Set(0)
}

// wake asks the loop for a cycle soon, without blocking.
func (c *scheduler) wake() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

// minCycleGap is the least time between two scheduling cycles: a burst of
// submissions wakes the loop once, not once per job.
func (c *scheduler) minCycleGap() time.Duration { return c.s.cfg.Cycle / 2 }

// run runs a cycle every Cycle, or sooner when woken, until ctx ends.
func (c *scheduler) run(ctx context.Context) {
	tick := time.NewTicker(c.s.cfg.Cycle)
	defer tick.Stop()
	var last time.Time
	for {
		if gap := c.minCycleGap() - time.Since(last); gap > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
		}
		last = time.Now()
		if err := c.cycle(ctx); err != nil && ctx.Err() == nil {
			c.s.log.Warn("scheduling cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-c.wakeCh:
		}
	}
}

// cycle is one scheduling cycle:
//  1. read the state once: the snapshot, the pending jobs, the
//     allocations to start and stop, the warm-ups;
//  2. run the pure core over them; keep its why-pending reasons;
//  3. commit the plan, if it changes anything, with fresh tokens, and
//     look up what the commit changed;
//  4. drive the warm-ups and the backend: start new tasks, stop stopping ones.
func (c *scheduler) cycle(ctx context.Context) error {
	c.cycleMu.Lock()
	defer c.cycleMu.Unlock()
	c.mu.Lock()
	paused, draining := c.paused, c.draining
	c.mu.Unlock()
	if draining {
		return nil
	}
	view := state.ReadCycle(c.s.fsm.Read) // the cycle's one walk of the state
	allocs, warm := view.Allocs, view.WarmUps
	if !paused {
		changed, err := c.scheduleOnce(ctx, view)
		if err != nil {
			return err
		}
		allocs, warm = changed.over(allocs, warm)
	}
	c.s.warm.drive(ctx, warm, view.Redis)
	c.s.backend.drive(allocs)
	return nil
}

func (c *scheduler) scheduleOnce(ctx context.Context, view *state.Cycle) (*commitChanges, error) {
	s := c.s
	// 1. The snapshot.
	snap, pending := view.Snap, view.Pending
	s.metrics.pending.Set(float64(len(pending)))
	if len(pending) == 0 && len(snap.Reservations) == 0 {
		c.setWhy(nil)
		return nil, nil
	}

	snap.Cache = s.warm.presence(ctx, view.Redis, pending)
	snap.Volumes = s.backend.claimsFor(pending)

	// 2. Decide.
	now := s.now()
	start := time.Now()
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: snap.Index})
	s.metrics.schedule.Observe(time.Since(start).Seconds())
	c.setWhy(plan.Pending)
	plan.Pending = nil
	if len(plan.Placements) == 0 && len(plan.Preemptions) == 0 && len(plan.Timeouts) == 0 &&
		sameReservations(plan.Reservations, snap.Reservations) {
		return nil, nil
	}

	// 3. Commit.
	start = time.Now()
	cr, err := c.commitPlan(ctx, plan, snap, now)
	if err != nil {
		return nil, err
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
	return c.lookUp(plan), nil
}

func (c *scheduler) setWhy(why map[structs.JobID]*sched.Why) {
	c.mu.Lock()
	c.why = why
	c.mu.Unlock()
}

// planChunkTasks bounds the tasks one PlanCommit log entry places. A big
// plan (a backlog of thousands of jobs) becomes several entries, handed to
// Raft back to back so they replicate as a pipeline, and no single entry
// stalls the servers' apply loops (which would delay Raft heartbeats).
const planChunkTasks = 2048

// commitPlan commits plan as one or more PlanCommit entries and merges
// their results.
func (c *scheduler) commitPlan(ctx context.Context, plan *sched.Plan, snap *sched.Snapshot, now time.Time) (state.CommitResult, error) {
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
		c.s.backend.notePlaced(tokens)
		p, err := c.s.start(ctx, &state.PlanCommit{Plan: chunk, Now: now, Tokens: tokens})
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

// sameReservations reports whether a plan keeps the reservations as they
// are (then it need not be committed).
func sameReservations(a, b []sched.Reservation) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// PauseScheduling stops (true) or resumes (false) this server's scheduling
// loop while it leads; liveness and retention go on. It is local to this
// server and not replicated: a new leader schedules. For maintenance and
// benchmarks.
func (s *Server) PauseScheduling(paused bool) {
	c := s.sched
	c.mu.Lock()
	c.paused = paused
	c.mu.Unlock()
	c.wake()
}

// Drain stops this server's scheduling loop for good, ahead of its
// shutdown: while or when it leads it places, starts and stops nothing
// more (liveness and retention go on). It returns once the cycle in
// flight, if any, has ended and the backend has returned from the Starts
// and Stops handed to it, so that the tasks the caller then stops are all
// there are: a job requeued by the shutdown is not placed again on a
// backend that is closing, to wait there a heartbeat TTL for nothing.
func (s *Server) Drain() {
	c := s.sched
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	c.cycleMu.Lock()
	defer c.cycleMu.Unlock()
	s.backend.idle()
}

// Why returns why job id is still pending as of the leader's latest cycle,
// or nil (placed, unknown, or this server is not the leader).
func (s *Server) Why(id structs.JobID) *sched.Why {
	c := s.sched
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why[id]
}

// commitChanges are what a cycle's commit changed that the cycle's one
// read could not see, looked up by ID after it: the tasks it placed, the
// tasks of the jobs it preempted or timed out (in whatever state they
// are now), and those jobs' warm-ups.
type commitChanges struct {
	allocs []state.Alloc
	warm   []state.JobWarmUp
	jobs   map[structs.JobID]bool // the jobs whose warm-ups were looked up
}

// lookUp reads, by ID, what committing plan changed.
func (c *scheduler) lookUp(plan *sched.Plan) *commitChanges {
	ch := &commitChanges{jobs: map[structs.JobID]bool{}}
	c.s.fsm.Read(func(st *state.State) {
		seen := map[structs.TaskID]bool{}
		var tasks []*structs.Task
		task := func(t *structs.Task) {
			if t != nil && !seen[t.ID] {
				seen[t.ID] = true
				tasks = append(tasks, t)
			}
		}
		job := func(id structs.JobID) {
			if ch.jobs[id] {
				return
			}
			ch.jobs[id] = true
			if j := st.Jobs[id]; j != nil && !j.State.Ended() {
				for _, w := range j.WarmUps {
					if w.Attempt == j.Attempt {
						ch.warm = append(ch.warm, state.JobWarmUp{Job: id, WarmUp: w})
					}
				}
			}
		}
		for _, pl := range plan.Placements {
			for _, tp := range pl.Tasks {
				task(st.Tasks[tp.ID])
			}
			job(pl.Job)
		}
		for _, p := range plan.Preemptions {
			for _, id := range p.Tasks {
				task(st.Tasks[id])
			}
			for _, t := range st.TasksOf(p.Victim) {
				task(t)
			}
			job(p.Victim)
		}
		for _, to := range plan.Timeouts {
			for _, t := range st.TasksOf(to.Job) {
				task(t)
			}
			job(to.Job)
		}
		ch.allocs = st.Allocs(tasks)
	})
	return ch
}

// over returns the cycle's allocations and warm-ups with the changes laid
// over them; a nil *commitChanges changes nothing.
func (ch *commitChanges) over(allocs []state.Alloc, warm []state.JobWarmUp) ([]state.Alloc, []state.JobWarmUp) {
	if ch == nil {
		return allocs, warm
	}
	ids := make(map[structs.TaskID]bool, len(ch.allocs))
	for _, a := range ch.allocs {
		ids[a.Task.ID] = true
	}
	allocs = append(slices.DeleteFunc(slices.Clone(allocs), func(a state.Alloc) bool { return ids[a.Task.ID] }), ch.allocs...)
	warm = append(slices.DeleteFunc(slices.Clone(warm), func(w state.JobWarmUp) bool { return ch.jobs[w.Job] }), ch.warm...)
	return allocs, warm
}
