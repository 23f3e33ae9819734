package cachefs

import (
	"context"
	"sync"

	"github.com/atom-sched/atom/pkg/cache"
)

// reader is one open file's read side. A read of chunk n right after
// chunk n-1 (or n again) is sequential: whole chunks are fetched and the
// window of chunks fetched ahead doubles, up to max. Any other read is
// random: the window closes and just the bytes asked are fetched, unless
// the chunk is already here.
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
}

type fetch struct {
	done chan struct{}
	data string // may be short or empty: the rest is zeros
	err  error
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
	seq := idx == r.last || idx == r.last+1
	if ft == nil && !seq {
		r.last, r.window = idx, 0
		r.mu.Unlock()
		b, err := r.f.c.ChunkRange(ctx, r.ino, idx, in, want)
		return string(b), in, err
	}
	if seq && idx != r.last {
		r.window = min(max(2, 2*r.window), r.max)
	}
	r.last = idx
	fresh := ft == nil
	if fresh {
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
		return "", 0, ctx.Err()
	}
	if ft.err != nil {
		r.mu.Lock()
		if r.chunks[idx] == ft { // the next read tries again
			delete(r.chunks, idx)
		}
		r.mu.Unlock()
		if !fresh && ctx.Err() == nil { // a read-ahead failed earlier: try now
			b, err := r.f.c.Chunk(ctx, r.ino, idx)
			return b, 0, err
		}
		return "", 0, ft.err
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
