package server

import (
	"context"
	"sync"
)

// extraWork is leader work registered from outside the server
// (AddLeaderWork): it runs in every term of leadership beside the
// scheduling loop, from when the leader has caught up with earlier terms
// until the term ends.
type extraWork struct {
	mu   sync.Mutex
	fns  []func(context.Context)
	term *termWork // the running term's; nil between terms
}

// termWork is where one term runs its work.
type termWork struct {
	ctx context.Context
	wg  *sync.WaitGroup
}

// AddLeaderWork has f run, in its own goroutine, in every term of
// leadership from now on, the current one included: f gets a context
// that ends with the term and must return soon after it does.
func (s *Server) AddLeaderWork(f func(ctx context.Context)) {
	w := &s.extra
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fns = append(w.fns, f)
	if w.term != nil {
		w.term.run(f)
	}
}

// begin runs the registered work for the term that ctx is the life of,
// counted in wg, and stops taking new work when ctx ends.
func (w *extraWork) begin(ctx context.Context, wg *sync.WaitGroup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.term = &termWork{ctx: ctx, wg: wg}
	for _, f := range w.fns {
		w.term.run(f)
	}
	// While term is set this goroutine is not done, so wg's count is
	// above zero whenever AddLeaderWork adds to it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		w.mu.Lock()
		w.term = nil
		w.mu.Unlock()
	}()
}

func (t *termWork) run(f func(context.Context)) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f(t.ctx)
	}()
}
