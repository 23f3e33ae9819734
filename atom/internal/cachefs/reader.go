package cachefs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/cache"
)

// reader is one open file's read side. A read of chunk n right after
// chunk n-1 (or n again) is sequential: whole chunks are fetched and the
// window of chunks fetched ahead doubles, up to max. Any other read is
// random: the window closes and just the bytes asked are fetched, unless
// the chunk is already here.
//
// When a fetch fails for Redis being unreachable (it tried for the whole
// bound), reads of this handle that need Redis fail at once for a short
// while (downFor) instead of waiting a whole bound again: the kernel
// follows a failed read-ahead with a read of its own, and a read that
// found its chunk's read-ahead failed has already waited out the outage.
//
// Lock order: never call into fsys or the client while holding mu (fsys
// takes its own locks, then mu, in invalidate).
type reader struct {
	f     *fsys
	ino   uint64
	chunk int64
	max   int64
	ctx   context.Context // the fetches' context: ends at close
	stop  context.CancelFunc

	mu     sync.Mutex
	size   int64            // the size last seen; guarded by mu
	stale  bool             // size must be read again; guarded by mu
	chunks map[int64]*fetch // fetched or being fetched; guarded by mu
	last   int64            // the last chunk read, -1 at first
	window int64
	down   error     // the last fetch's failure for Redis unreachable
	downAt time.Time // when down happened
}

// downFor is how long after a fetch failed for Redis being unreachable
// the handle's reads fail at once (capped at the bound): long enough for
// the kernel's retry of the same pages, short enough that a reader
// retrying after Redis returns gets data.
const downFor = time.Second

// failed returns the recent outage error, if any. Called with mu held.
func (r *reader) failed() error {
	if r.down != nil && time.Since(r.downAt) < min(downFor, r.f.timeout) {
		return r.down
	}
	return nil
}

// noteErr remembers err if it tells of Redis being unreachable.
func (r *reader) noteErr(err error) {
	if errors.Is(err, cache.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		r.mu.Lock()
		r.down, r.downAt = err, time.Now()
		r.mu.Unlock()
	}
}

type fetch struct {
	done chan struct{}
	data string // may be short or empty: the rest is zeros
	err  error
}

// failed tells whether the fetch is over and failed.
func (ft *fetch) failed() bool {
	select {
	case <-ft.done:
		return ft.err != nil
	default:
		return false
	}
}

func newReader(f *fsys, a cache.Attr, ahead int64) *reader {
	ctx, stop := context.WithCancel(context.Background())
	return &reader{f: f, ino: a.Ino, chunk: a.Chunk, max: ahead, ctx: ctx, stop: stop,
		size: a.Size, chunks: map[int64]*fetch{}, last: -1}
}

func (r *reader) close() {
	r.stop()
	r.mu.Lock()
	r.chunks = map[int64]*fetch{}
	r.mu.Unlock()
}

// invalidate drops fetched chunks: this mount wrote or truncated the file.
func (r *reader) invalidate() {
	r.mu.Lock()
	r.chunks, r.stale = map[int64]*fetch{}, true
	r.mu.Unlock()
}

// sizeFor returns the file's size, read again from Redis when the read
// starts at or past the size known (the file may have grown) or the size
// is stale.
func (r *reader) sizeFor(ctx context.Context, off int64) (int64, error) {
	r.mu.Lock()
	size, stale := r.size, r.stale
	r.mu.Unlock()
	if off < size && !stale {
		return size, nil
	}
	a, err := r.f.c.StatIno(ctx, r.ino)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.size, r.stale = a.Size, false
	r.mu.Unlock()
	return a.Size, nil
}

func (r *reader) read(ctx context.Context, buf []byte, off int64) (int, error) {
	size, err := r.sizeFor(ctx, off)
	if err != nil || off >= size {
		return 0, err
	}
	end := min(off+int64(len(buf)), size)
	n := int64(0)
	for pos := off; pos < end; {
		idx, in := pos/r.chunk, pos%r.chunk
		want := min(r.chunk-in, end-pos)
		data, base, err := r.get(ctx, idx, in, want, size)
		if err != nil {
			return 0, err
		}
		c := 0
		if in-base < int64(len(data)) {
			c = copy(buf[n:n+want], data[in-base:])
		}
		clear(buf[n+int64(c) : n+want])
		n, pos = n+want, pos+want
	}
	return int(n), nil
}

// get returns data of chunk idx starting at chunk offset base: the whole
// chunk (base 0) or, for a random read, just [in, in+want) (base in).
func (r *reader) get(ctx context.Context, idx, in, want, size int64) (string, int64, error) {
	r.mu.Lock()
	ft := r.chunks[idx]
	if err := r.failed(); err != nil && (ft == nil || ft.failed()) {
		r.mu.Unlock()
		return "", 0, err
	}
	seq := idx == r.last || idx == r.last+1
	if ft == nil && !seq {
		r.last, r.window = idx, 0
		r.mu.Unlock()
		b, err := r.f.c.ChunkRange(ctx, r.ino, idx, in, want)
		r.noteErr(err)
		return string(b), in, err
	}
	if seq && idx != r.last {
		r.window = min(max(2, 2*r.window), r.max)
	}
	r.last = idx
	waited := ft == nil || !ft.failed() // the fetch tries while this read waits
	if ft == nil {
		ft = r.start(idx)
	}
	for k := idx + 1; k <= idx+r.window && k*r.chunk < size; k++ {
		if r.chunks[k] == nil {
			r.start(k)
		}
	}
	for k := range r.chunks {
		if k < idx {
			delete(r.chunks, k)
		}
	}
	r.mu.Unlock()
	select {
	case <-ft.done:
	case <-ctx.Done():
		r.noteErr(ctx.Err())
		return "", 0, ctx.Err()
	}
	if ft.err != nil {
		r.mu.Lock()
		if r.chunks[idx] == ft { // the next read tries again
			delete(r.chunks, idx)
		}
		r.mu.Unlock()
		if waited || ctx.Err() != nil {
			r.noteErr(ft.err)
			return "", 0, ft.err
		}
		// A read-ahead failed a while ago: try now.
		b, err := r.f.c.Chunk(ctx, r.ino, idx)
		r.noteErr(err)
		return b, 0, err
	}
	return ft.data, 0, nil
}

// start fetches chunk idx in the background. Called with mu held.
func (r *reader) start(idx int64) *fetch {
	ft := &fetch{done: make(chan struct{})}
	r.chunks[idx] = ft
	go func() {
		defer close(ft.done)
		ft.data, ft.err = r.f.c.Chunk(r.ctx, r.ino, idx)
	}()
	return ft
}
