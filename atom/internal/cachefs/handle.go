package cachefs

import (
	"context"
	"strconv"
	"strings"
	"syscall"

	"github.com/atom-sched/atom/pkg/cache"
)

// handle is one open file or directory. Reads go through its read-ahead
// (reader.go); writes gather in buf until a chunk fills or a flush.
type handle struct {
	f     *fsys
	ino   uint64
	chunk int64
	write bool
	r     *reader // files only

	// buf holds unflushed bytes for [bufOff, bufOff+len(buf)), all in one
	// chunk. Guarded by wmu.
	wmu    chan struct{} // a lock usable with a context
	buf    []byte
	bufOff int64
}

func (f *fsys) open(a cache.Attr, write bool) uint64 {
	h := &handle{f: f, ino: a.Ino, chunk: a.Chunk, write: write, wmu: make(chan struct{}, 1)}
	if !a.Dir {
		h.r = newReader(f, a, f.ahead)
	}
	fh := f.next.Add(1)
	f.mu.Lock()
	f.handles[fh] = h
	f.mu.Unlock()
	return fh
}

func (f *fsys) handle(fh uint64) *handle {
	if fh == noFh {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handles[fh]
}

// writers returns the open handles of ino that may hold unflushed data.
func (f *fsys) writers(ino uint64) []*handle {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*handle
	for _, h := range f.handles {
		if h.ino == ino && h.write {
			out = append(out, h)
		}
	}
	return out
}

// flushIno sends every handle's unflushed writes to ino, so a read or
// truncate through this mount sees them.
func (f *fsys) flushIno(ctx context.Context, ino uint64) error {
	for _, h := range f.writers(ino) {
		if err := h.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pending is the end of ino's unflushed writes in this mount (0: none),
// so stat sees a file being written at its full size.
func (f *fsys) pending(ino uint64) int64 {
	var end int64
	for _, h := range f.writers(ino) {
		h.wmu <- struct{}{}
		if len(h.buf) > 0 {
			end = max(end, h.bufOff+int64(len(h.buf)))
		}
		<-h.wmu
	}
	return end
}

// invalidate drops what this mount's readers of ino hold.
func (f *fsys) invalidate(ino uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handles {
		if h.ino == ino && h.r != nil {
			h.r.invalidate()
		}
	}
}

func (f *fsys) Read(path string, buf []byte, off int64, fh uint64) int {
	h := f.handle(fh)
	if h == nil || h.r == nil {
		return -int(syscall.EBADF)
	}
	ctx, cancel := f.op()
	defer cancel()
	if err := f.flushIno(ctx, h.ino); err != nil {
		return f.errc("read", path, err)
	}
	n, err := h.r.read(ctx, buf, off)
	if err != nil {
		return f.errc("read", path, err)
	}
	return n
}

func (f *fsys) Write(path string, p []byte, off int64, fh uint64) int {
	h := f.handle(fh)
	if h == nil || h.r == nil {
		return -int(syscall.EBADF)
	}
	ctx, cancel := f.op()
	defer cancel()
	if err := h.writeAt(ctx, p, off); err != nil {
		return f.errc("write", path, err)
	}
	return len(p)
}

func (h *handle) writeAt(ctx context.Context, p []byte, off int64) error {
	h.wmu <- struct{}{}
	defer func() { <-h.wmu }()
	for len(p) > 0 {
		if len(h.buf) > 0 && off != h.bufOff+int64(len(h.buf)) {
			if err := h.flushLocked(ctx); err != nil {
				return err
			}
		}
		if len(h.buf) == 0 {
			h.bufOff = off
			if h.buf == nil {
				h.buf = make([]byte, 0, h.chunk) // kept for the handle's life
			}
		}
		room := h.chunk - (h.bufOff%h.chunk + int64(len(h.buf)))
		k := min(room, int64(len(p)))
		h.buf = append(h.buf, p[:k]...)
		p, off = p[k:], off+k
		if k == room { // the chunk is full
			if err := h.flushLocked(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *handle) flush(ctx context.Context) error {
	select {
	case h.wmu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.wmu }()
	return h.flushLocked(ctx)
}

func (h *handle) flushLocked(ctx context.Context) error {
	if len(h.buf) == 0 {
		return nil
	}
	_, err := h.f.c.WriteAt(ctx, h.ino, h.chunk, h.bufOff, h.buf)
	h.f.invalidate(h.ino)
	if err != nil {
		return err // kept: a later flush retries it
	}
	h.buf = h.buf[:0]
	return nil
}

func (f *fsys) Flush(path string, fh uint64) int {
	h := f.handle(fh)
	if h == nil || !h.write {
		return 0
	}
	ctx, cancel := f.op()
	defer cancel()
	return f.errc("flush", path, h.flush(ctx))
}

func (f *fsys) Fsync(path string, _ bool, fh uint64) int { return f.Flush(path, fh) }

func (f *fsys) Release(path string, fh uint64) int {
	h := f.handle(fh)
	if h == nil {
		return 0
	}
	rc := f.Flush(path, fh)
	f.mu.Lock()
	delete(f.handles, fh)
	f.mu.Unlock()
	if h.r != nil {
		h.r.close()
	}
	return rc
}

// memory is Redis's used and total memory (maxmemory, or the machine's).
func memory(ctx context.Context, c *cache.Client) (used, total uint64, err error) {
	info, err := c.Redis().Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, err
	}
	field := func(k string) uint64 {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(line, k+":"); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
		return 0
	}
	used, total = field("used_memory"), field("maxmemory")
	if total == 0 {
		total = field("total_system_memory")
	}
	return used, total, nil
}
