package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/cache"
)

// warmBusyRetry is how often a warm-up whose dataset is being written by
// another writer (atom cache put, or a warm-up of an earlier leader that
// still holds the lease) looks again.
var warmBusyRetry = time.Second

// copyFlights are the dataset copies the warm-ups run now: one per
// (target Redis, dataset). A warm-up that needs a copy already running
// waits for it and shares its outcome and progress, instead of copying
// the same dataset into the same place at once (which broke both).
type copyFlights struct {
	mu sync.Mutex
	m  map[heldKey]*copyFlight
}

// copyFlight is one copy of a dataset into one cache Redis.
type copyFlight struct {
	done chan struct{} // closed at the end; then the fields below are final

	err      error
	copied   bool // false: it was there already, nothing was copied
	canceled bool // the warm-up that ran it ended (its job did, or the term): run it again

	mu           sync.Mutex // guards the fields below
	bytes, files int64
	runs         []*warmRun
}

// join adds r to f's runs: r counts what f has copied so far and, from
// now on, what it copies.
func (f *copyFlight) join(r *warmRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, r)
	r.mu.Lock()
	r.bytes += f.bytes
	r.files += f.files
	r.mu.Unlock()
}

func (f *copyFlight) add(bytes, files int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bytes += bytes
	f.files += files
	for _, r := range f.runs {
		r.mu.Lock()
		r.bytes += bytes
		r.files += files
		r.mu.Unlock()
	}
}

// copy copies dataset from src into dst for r unless it is there already,
// or joins the copy another warm-up runs of it into dst. copied is false
// when dst held the dataset whole (by the time the copy would start).
func (fl *copyFlights) copy(ctx context.Context, r *warmRun, src, dst *cache.Client, dataset string) (copied bool, err error) {
	key := heldKey{dst.Addr(), dataset}
	for {
		fl.mu.Lock()
		if fl.m == nil {
			fl.m = map[heldKey]*copyFlight{}
		}
		f := fl.m[key]
		run := f == nil
		if run {
			f = &copyFlight{done: make(chan struct{})}
			fl.m[key] = f
		}
		fl.mu.Unlock()
		f.join(r)
		if run {
			f.copied, f.err = fl.run(ctx, f, src, dst, dataset)
			f.canceled = ctx.Err() != nil
			fl.mu.Lock()
			delete(fl.m, key)
			fl.mu.Unlock()
			close(f.done)
			return f.copied, f.err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-f.done:
		}
		if !f.canceled {
			return f.copied, f.err
		}
		// The warm-up that ran it ended first: run it here, counting
		// from zero again.
		f.mu.Lock()
		r.mu.Lock()
		r.bytes -= f.bytes
		r.files -= f.files
		r.mu.Unlock()
		f.mu.Unlock()
	}
}

// run is one flight: skip a dataset dst holds whole, wait out another
// writer's lease, copy.
func (fl *copyFlights) run(ctx context.Context, f *copyFlight, src, dst *cache.Client, dataset string) (bool, error) {
	for {
		_, ok, err := dst.Complete(ctx, dataset)
		if err != nil || ok {
			return false, err
		}
		_, err = cache.CopyFiles(ctx, src, dst, dataset, func(n int64) { f.add(n, 0) }, func() { f.add(0, 1) })
		if !errors.Is(err, cache.ErrBusy) {
			return err == nil, err
		}
		t := time.NewTimer(warmBusyRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, err
		case <-t.C:
		}
	}
}
