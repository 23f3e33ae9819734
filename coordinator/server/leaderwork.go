package server

import (
	"context"
	"sync"
)

// leaderComponent is one piece of leader-only work with a state of its
// own, as Nomad's establishLeadership and revokeLeadership run theirs.
// In each term, once the leader has caught up with earlier terms:
//
//	establish (every component, in the order they were added)
//	──▶ run (each in its own goroutine, until the term's context ends)
//	──▶ revoke (every component, in reverse order, once every run returned)
//
// establish and revoke run one at a time and must be quick; a component
// added during a term is established and run in it at once.
type leaderComponent interface {
	establish(ctx context.Context)
	run(ctx context.Context)
	revoke()
}

// workFunc is leader work without a term state of its own
// (AddLeaderWork).
type workFunc func(ctx context.Context)

func (workFunc) establish(context.Context) {}
func (f workFunc) run(ctx context.Context) { f(ctx) }
func (workFunc) revoke()                   {}

// leaderComponents are the components every term runs: the server's own
// and those added from outside (AddLeaderWork).
type leaderComponents struct {
	mu   sync.Mutex
	cs   []leaderComponent
	term *termWork // the running term's; nil between terms
}

// termWork is where one term runs its components.
type termWork struct {
	ctx context.Context
	wg  *sync.WaitGroup
	cs  []leaderComponent // established in this term, to revoke at its end
}

// AddLeaderWork has f run, in its own goroutine, in every term of
// leadership from now on, the current one included: f gets a context
// that ends with the term and must return soon after it does.
func (s *Server) AddLeaderWork(f func(ctx context.Context)) { s.components.add(workFunc(f)) }

func (w *leaderComponents) add(c leaderComponent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cs = append(w.cs, c)
	if w.term != nil {
		w.term.start(c)
	}
}

// begin establishes and runs every component for the term that ctx is the
// life of, counted in wg, and stops taking new ones when ctx ends.
func (w *leaderComponents) begin(ctx context.Context, wg *sync.WaitGroup) *termWork {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &termWork{ctx: ctx, wg: wg}
	w.term = t
	for _, c := range w.cs {
		c.establish(ctx)
		t.cs = append(t.cs, c)
	}
	for _, c := range t.cs {
		t.run(c)
	}
	// While term is set this goroutine is not done, so wg's count is
	// above zero whenever add adds to it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		w.mu.Lock()
		w.term = nil
		w.mu.Unlock()
	}()
	return t
}

// end revokes the term's components, last established first; every run
// has returned.
func (t *termWork) end() {
	for i := len(t.cs) - 1; i >= 0; i-- {
		t.cs[i].revoke()
	}
}

// start establishes and runs c in the running term (a component added
// during it). Guarded by leaderComponents.mu.
func (t *termWork) start(c leaderComponent) {
	c.establish(t.ctx)
	t.cs = append(t.cs, c)
	t.run(c)
}

func (t *termWork) run(c leaderComponent) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		c.run(t.ctx)
	}()
}
