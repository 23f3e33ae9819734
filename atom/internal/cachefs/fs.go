// Package cachefs serves the dataset cache (pkg/cache: a file tree in
// Redis) as a FUSE filesystem, with winfsp/cgofuse over libfuse 2.
//
// Reads fetch whole chunks with read-ahead: once a handle reads
// sequentially, the next chunks are fetched in parallel ahead of the
// reader (the window doubles up to Options.ReadAhead); random reads fetch
// just the range asked (GETRANGE). Writes are gathered per handle into
// chunk-sized pieces and sent as one atomic SETRANGE-and-grow each when a
// chunk fills, the writer jumps elsewhere, or on fsync or close.
//
// Consistency is close-to-open, like NFS: what a writer wrote is visible
// to any mount once the writer's close (or fsync) returns; a file opened
// after that sees it. Concurrent writers of disjoint ranges both land;
// for overlapping ranges the last flush of each byte wins. Creating with
// O_EXCL is exclusive across all mounts; rename and unlink are atomic.
// Attributes are cached by the kernel for a second (attr_timeout). An
// unlinked file's data is deleted at once: other handles on it then read
// ENOENT (there is no keep-until-last-close across machines).
//
// Errors: a missing name is ENOENT (and the rest of errno as pkg/cache
// gives it); Redis unreachable for longer than the client's bound is EIO,
// never a hang, and the mount works again when Redis returns.
package cachefs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/winfsp/cgofuse/fuse"

	"github.com/atom-sched/atom/pkg/cache"
)

// fsys implements fuse.FileSystemInterface over a cache.Client.
type fsys struct {
	fuse.FileSystemBase
	c        *cache.Client
	timeout  time.Duration
	ahead    int64 // read-ahead window, in chunks
	uid, gid uint32
	log      *slog.Logger
	ready    chan struct{}

	next    atomic.Uint64
	mu      sync.Mutex
	handles map[uint64]*handle // guarded by mu
	lastLog atomic.Int64       // unix ns of the last EIO logged
}

const noFh = ^uint64(0)

func (f *fsys) Init() { close(f.ready) }

// op is the context of one FUSE operation: bounded, so no call hangs.
func (f *fsys) op() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.timeout)
}

// errc maps err to a negative errno: the layout's errno, or EIO.
func (f *fsys) errc(op, path string, err error) int {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return -int(e)
	}
	if t := time.Now().UnixNano(); t-f.lastLog.Load() > int64(time.Second) {
		f.lastLog.Store(t)
		f.log.Warn("cache: I/O error", "op", op, "path", path, "err", err)
	}
	return -int(syscall.EIO)
}

func (f *fsys) fill(st *fuse.Stat_t, a cache.Attr) {
	*st = fuse.Stat_t{Ino: a.Ino, Mode: uint32(a.Mode), Nlink: 1, Uid: f.uid, Gid: f.gid, Size: a.Size,
		Mtim: fuse.NewTimespec(a.Mtime), Ctim: fuse.NewTimespec(a.Ctime), Atim: fuse.NewTimespec(a.Mtime),
		Blksize: 1 << 20, Blocks: (a.Size + 511) / 512}
	if a.Dir {
		st.Mode |= fuse.S_IFDIR
		st.Nlink = 2
	} else {
		st.Mode |= fuse.S_IFREG
		if p := f.pending(a.Ino); p > st.Size {
			st.Size = p
		}
	}
}

func (f *fsys) Getattr(path string, st *fuse.Stat_t, fh uint64) int {
	ctx, cancel := f.op()
	defer cancel()
	var a cache.Attr
	var err error
	if h := f.handle(fh); h != nil && path == "" {
		a, err = f.c.StatIno(ctx, h.ino)
	} else {
		a, err = f.c.Stat(ctx, path)
	}
	if err != nil {
		return f.errc("getattr", path, err)
	}
	f.fill(st, a)
	return 0
}

func (f *fsys) Statfs(path string, st *fuse.Statfs_t) int {
	ctx, cancel := f.op()
	defer cancel()
	used, total, err := memory(ctx, f.c)
	if err != nil {
		return f.errc("statfs", path, err)
	}
	const bs = 4096
	*st = fuse.Statfs_t{Bsize: bs, Frsize: bs, Blocks: total / bs, Bfree: (total - min(used, total)) / bs,
		Files: 1 << 32, Ffree: 1 << 31, Namemax: 255}
	st.Bavail, st.Favail = st.Bfree, st.Ffree
	return 0
}

func (f *fsys) Mkdir(path string, mode uint32) int {
	ctx, cancel := f.op()
	defer cancel()
	_, err := f.c.Mkdir(ctx, path, os.FileMode(mode)&os.ModePerm)
	return f.errc("mkdir", path, err)
}

func (f *fsys) Unlink(path string) int {
	ctx, cancel := f.op()
	defer cancel()
	return f.errc("unlink", path, f.c.Remove(ctx, path))
}

func (f *fsys) Rmdir(path string) int {
	ctx, cancel := f.op()
	defer cancel()
	return f.errc("rmdir", path, f.c.Rmdir(ctx, path))
}

func (f *fsys) Rename(from, to string) int {
	ctx, cancel := f.op()
	defer cancel()
	return f.errc("rename", from, f.c.Rename(ctx, from, to))
}

func (f *fsys) Chmod(path string, mode uint32) int {
	ctx, cancel := f.op()
	defer cancel()
	return f.errc("chmod", path, f.c.Chmod(ctx, path, os.FileMode(mode)))
}

// Chown is accepted and ignored: files belong to the mount's owner.
func (f *fsys) Chown(string, uint32, uint32) int { return 0 }

func (f *fsys) Utimens(path string, ts []fuse.Timespec) int {
	ctx, cancel := f.op()
	defer cancel()
	t := time.Now()
	if len(ts) > 1 {
		t = ts[1].Time()
	}
	return f.errc("utimens", path, f.c.SetMtime(ctx, path, t))
}

func (f *fsys) Truncate(path string, size int64, fh uint64) int {
	ctx, cancel := f.op()
	defer cancel()
	a, err := f.c.Dirty(ctx, path)
	if err == nil {
		err = f.flushIno(ctx, a.Ino)
	}
	if err == nil {
		err = f.c.Truncate(ctx, path, size)
	}
	f.invalidate(a.Ino)
	return f.errc("truncate", path, err)
}

func (f *fsys) Create(path string, flags int, mode uint32) (int, uint64) {
	ctx, cancel := f.op()
	defer cancel()
	a, _, err := f.c.Create(ctx, path, os.FileMode(mode)&os.ModePerm, flags&os.O_EXCL != 0)
	if err != nil {
		return f.errc("create", path, err), noFh
	}
	return 0, f.open(a, true)
}

func (f *fsys) Open(path string, flags int) (int, uint64) {
	ctx, cancel := f.op()
	defer cancel()
	write := flags&(os.O_WRONLY|os.O_RDWR) != 0
	var a cache.Attr
	var err error
	if write {
		a, err = f.c.Dirty(ctx, path) // the datasets above change
	} else {
		a, err = f.c.Stat(ctx, path)
	}
	if err != nil {
		return f.errc("open", path, err), noFh
	}
	if a.Dir {
		return -int(syscall.EISDIR), noFh
	}
	return 0, f.open(a, write)
}

func (f *fsys) Opendir(path string) (int, uint64) {
	ctx, cancel := f.op()
	defer cancel()
	a, err := f.c.Stat(ctx, path)
	if err != nil {
		return f.errc("opendir", path, err), noFh
	}
	if !a.Dir {
		return -int(syscall.ENOTDIR), noFh
	}
	return 0, f.open(a, false)
}

func (f *fsys) Readdir(path string, fill func(string, *fuse.Stat_t, int64) bool, _ int64, fh uint64) int {
	h := f.handle(fh)
	if h == nil {
		return -int(syscall.EBADF)
	}
	ctx, cancel := f.op()
	defer cancel()
	ents, err := f.c.ReadDirIno(ctx, h.ino)
	if err != nil {
		return f.errc("readdir", path, err)
	}
	fill(".", nil, 0)
	fill("..", nil, 0)
	for _, e := range ents {
		var st fuse.Stat_t
		f.fill(&st, e.Attr)
		if !fill(e.Name, &st, 0) {
			break
		}
	}
	return 0
}

func (f *fsys) Releasedir(path string, fh uint64) int { return f.Release(path, fh) }
