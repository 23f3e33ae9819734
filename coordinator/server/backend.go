package server

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// driver is the leader component that drives the backend: each cycle it
// starts the Scheduled tasks this term placed (and those it inherited
// that the backend adopts) and stops the Stopping tasks, those it has not
// handled yet. It also remembers, across terms, which allocations this
// server process placed.
type driver struct {
	s *Server

	mu sync.Mutex // guards b
	b  backend.Backend

	placedMu sync.Mutex
	placed   map[allocKey]time.Time // allocations this process placed, when (backendTerm.inherited)

	termMu sync.Mutex   // guards term and its maps
	term   *backendTerm // nil between terms

	slots chan struct{} // backendParallelism: the Starts and Stops running at once
}

// backendTerm is what one term told the backend.
type backendTerm struct {
	// started and stopped record what this term told the backend; a new
	// leader starts empty and repeats every stop (the backend is
	// idempotent). Keys carry the allocation token because a replaced
	// service replica keeps its task ID.
	started map[allocKey]bool
	stopped map[allocKey]bool
	// inherited are the tasks that were Scheduled when this term began
	// and that another server (or an earlier run of this one) placed.
	// This term never starts them, unless the backend adopts them
	// (Capabilities.Adopts: Kubernetes Pods, which every server sees):
	// the leader that placed them may have started them on its own
	// backend just before it went (a local process this server cannot
	// see), and starting one again would run the allocation twice. A
	// started one heartbeats (Running); one that never started stays
	// silent, is declared Lost after the heartbeat TTL and is placed
	// again as a new allocation (state: a task lost before it ran
	// requeues its job without using its restarts). So a task is only
	// ever started by the server process that placed it.
	inherited map[allocKey]bool
	// busy are the tasks with a Start or Stop running, which no later
	// drive repeats or reorders: a task's Stop waits for its Start to
	// return, and a new allocation of it for the old one's Stop. ops
	// counts those calls; revoke and Drain wait for them.
	busy map[structs.TaskID]bool
	ops  sync.WaitGroup
}

// allocKey names one allocation: a task ID and the token it was placed
// with.
type allocKey struct {
	id    structs.TaskID
	token string
}

func newDriver(s *Server) *driver {
	return &driver{s: s, placed: map[allocKey]time.Time{}, slots: make(chan struct{}, backendParallelism)}
}

// establish notes the tasks placed before this term that have not
// reported yet: they are not this term's to start (backendTerm.inherited).
func (d *driver) establish(context.Context) {
	inherited := map[allocKey]bool{}
	d.s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			// A task waiting for a cache warm-up was never started: the
			// warm-up's end applies before its leader starts it.
			if k := (allocKey{id: id, token: st.Tokens[id]}); t.State == structs.TaskScheduled && !d.placedHere(k) && !st.Warming(t) {
				inherited[k] = true
			}
		}
	})
	d.termMu.Lock()
	d.term = &backendTerm{started: map[allocKey]bool{}, stopped: map[allocKey]bool{}, inherited: inherited,
		busy: map[structs.TaskID]bool{}}
	d.termMu.Unlock()
}

func (d *driver) run(context.Context) {} // the scheduling cycle drives it

// revoke ends the term once the Starts and Stops it began have returned:
// none outlives the leadership that made it.
func (d *driver) revoke() {
	d.termMu.Lock()
	ls := d.term
	d.term = nil
	d.termMu.Unlock()
	if ls != nil {
		ls.ops.Wait()
	}
}

// idle returns once the Starts and Stops running have returned.
func (d *driver) idle() {
	d.termMu.Lock()
	ls := d.term
	d.termMu.Unlock()
	if ls != nil {
		ls.ops.Wait()
	}
}

func (d *driver) backend() backend.Backend {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b
}

// SetBackend sets the backend the leader drives; nil stops driving one.
// A backend set while leading is caught up on the next cycle.
func (s *Server) SetBackend(b backend.Backend) {
	s.backend.mu.Lock()
	s.backend.b = b
	s.backend.mu.Unlock()
	s.sched.wake()
}

// The server is its backends' host and event sink, in process.
var (
	_ backend.Host      = (*Server)(nil)
	_ backend.EventSink = (*Server)(nil)
)

// Task returns what this server's state knows of task id (backend.Host):
// its current allocation's token ("" when the task is not known) and
// whether it holds resources.
func (s *Server) Task(id structs.TaskID) (token string, live bool) {
	s.fsm.Read(func(st *state.State) {
		if t := st.Tasks[id]; t != nil {
			token, live = st.Tokens[id], t.State.HoldsResources()
		}
	})
	return token, live
}

// drive starts the Scheduled tasks of allocs this term placed (and those
// it inherited that the backend adopts) and stops the Stopping ones,
// those it has not handled yet; allocs are the cycle's (state.Cycle),
// tasks in other states are passed over. It hands the calls to the
// backend and returns without waiting for them: a backend may spend
// seconds on a thousand Pods, or 30 on an API server that does not
// answer, and the next cycle (other clusters' tasks among them) does not
// wait behind them. A failed Start or Stop is retried next cycle; a task
// that never starts is Lost after the heartbeat TTL.
func (d *driver) drive(allocs []state.Alloc) {
	b := d.backend()
	if b == nil {
		return
	}
	d.termMu.Lock()
	defer d.termMu.Unlock()
	ls := d.term
	if ls == nil {
		return
	}
	type start struct {
		l backend.Launch
		k allocKey
	}
	type stop struct {
		h backend.Halt
		k allocKey
	}
	var starts []start
	var stops []stop
	seen := make(map[allocKey]bool, len(ls.started)+len(ls.stopped))
	s := d.s
	now := s.now()
	for _, a := range allocs {
		t := a.Task
		k := allocKey{id: t.ID, token: a.Token}
		switch t.State {
		case structs.TaskScheduled:
			seen[k] = true
			if !ls.started[k] && !a.Warming && !ls.busy[t.ID] && a.Job != nil {
				starts = append(starts, start{k: k, l: backend.Launch{Task: t, Job: a.Job, Token: a.Token,
					Gang: a.Gang, GangWhole: a.GangWhole, Cluster: a.Cluster}})
			}
		case structs.TaskStopping:
			seen[k] = true
			// A preempted task's notice runs first: its atom sends
			// SIGTERM when it ends, the backend only after.
			if !ls.stopped[k] && !now.Before(t.NoticeUntil) && !ls.busy[t.ID] {
				stops = append(stops, stop{k: k, h: backend.Halt{Task: t.ID, Grace: s.cfg.StopGrace, Cluster: a.Cluster}})
			}
		}
	}
	// Adopts is asked outside the state's lock, as every Backend call: a
	// backend may read the state (Server.Read), and a read nested in
	// another waits behind a Raft apply queued between them, which waits
	// for the outer read: the leader deadlocked.
	adopts := b.Capabilities().Adopts
	starts = slices.DeleteFunc(starts, func(st start) bool { return ls.inherited[st.k] && (adopts == nil || !adopts(st.l)) })
	// Forget allocations that have moved on, so the maps stay small.
	for _, m := range []map[allocKey]bool{ls.started, ls.stopped, ls.inherited} {
		maps.DeleteFunc(m, func(k allocKey, _ bool) bool { return !seen[k] })
	}
	d.forgetPlaced(seen)
	// Stops are handed over first, then starts, each in task order.
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.k.id, b.k.id) })
	slices.SortFunc(stops, func(a, b stop) int { return cmp.Compare(a.k.id, b.k.id) })
	for _, st := range stops {
		k, h := st.k, st.h
		d.call(ls, k, func() bool {
			if err := b.Stop(h); err != nil {
				s.log.Warn("backend stop failed", "task", k.id, "err", err)
				return false
			}
			return true
		}, ls.stopped)
	}
	for _, st := range starts {
		k, l := st.k, st.l
		d.call(ls, k, func() bool {
			if err := b.Start(l); errors.Is(err, backend.ErrClosed) {
				s.log.Debug("backend start refused", "task", k.id, "err", err)
				return false
			} else if err != nil {
				s.log.Warn("backend start failed", "task", k.id, "err", err)
				return false
			}
			return true
		}, ls.started)
	}
}

// call runs fn, one Start or Stop of allocation k, in the background on
// one of the driver's slots, and records in done that it succeeded. The
// caller holds termMu.
func (d *driver) call(ls *backendTerm, k allocKey, fn func() bool, done map[allocKey]bool) {
	ls.busy[k.id] = true
	ls.ops.Add(1)
	go func() {
		defer ls.ops.Done()
		d.slots <- struct{}{}
		ok := fn()
		<-d.slots
		d.termMu.Lock()
		delete(ls.busy, k.id)
		if ok {
			done[k] = true
		}
		d.termMu.Unlock()
	}()
}

// backendParallelism is how many Starts and Stops the leader has the
// backend run at once: a Kubernetes backend spends a few API round trips
// on each, which one at a time would make placing 1,000 tasks take tens of
// seconds. Backends are safe for concurrent use.
const backendParallelism = 64

// notePlaced records the allocations this server process is about to
// commit: it may start them in any term (backendTerm.inherited).
func (d *driver) notePlaced(tokens map[structs.TaskID]string) {
	d.placedMu.Lock()
	defer d.placedMu.Unlock()
	now := time.Now()
	for id, tok := range tokens {
		d.placed[allocKey{id: id, token: tok}] = now
	}
}

// forget drops allocations from the placed record (a term ended with
// them still waiting for a warm-up: warmups.revoke).
func (d *driver) forget(keys []allocKey) {
	d.placedMu.Lock()
	defer d.placedMu.Unlock()
	for _, k := range keys {
		delete(d.placed, k)
	}
}

// placedHere reports whether this server process placed allocation k.
func (d *driver) placedHere(k allocKey) bool {
	d.placedMu.Lock()
	defer d.placedMu.Unlock()
	_, ok := d.placed[k]
	return ok
}

// forgetPlaced drops the placed allocations that are no longer Scheduled
// or Stopping (in seen); one not in the state yet (its commit still in
// flight) is kept for a heartbeat TTL.
func (d *driver) forgetPlaced(seen map[allocKey]bool) {
	d.placedMu.Lock()
	defer d.placedMu.Unlock()
	old := time.Now().Add(-d.s.cfg.HeartbeatTTL)
	maps.DeleteFunc(d.placed, func(k allocKey, at time.Time) bool { return !seen[k] && at.Before(old) })
}
