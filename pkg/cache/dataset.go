package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"
	"time"
)

// DatasetInfo is a dataset's completeness marker: when it was loaded
// whole, and how many files and bytes it had then.
type DatasetInfo struct {
	Files, Bytes int64
	At           time.Time
}

// Complete reports whether this Redis holds dataset (a directory path
// such as "lidar/2024-05") completely: it was loaded whole (PutDir, Copy)
// and nothing under it has changed since. A missing dataset is simply
// not complete (ok false, err nil); err is for Redis trouble.
func (c *Client) Complete(ctx context.Context, dataset string) (info DatasetInfo, ok bool, err error) {
	a, err := c.Stat(ctx, dataset)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return info, false, nil
	}
	if err != nil || a.Complete == nil || !a.Dir {
		return info, false, err
	}
	return *a.Complete, true, nil
}

// MarkComplete sets dataset's completeness marker, after checking that
// the dataset holds exactly info's files and bytes: a load that lost files
// (another writer removed them) is refused, never marked. Any later
// change under it (create, write, truncate, rename, remove; through a
// mount or this package) clears the marker again.
func (c *Client) MarkComplete(ctx context.Context, dataset string, info DatasetInfo) error {
	parts, err := split(dataset)
	if err != nil {
		return err
	}
	u, err := c.Du(ctx, dataset)
	if err != nil {
		return err
	}
	if u.Files != info.Files || u.Bytes != info.Bytes {
		return fmt.Errorf("dataset %s holds %d files, %d bytes, not the %d files, %d bytes written: not marked complete (did another writer change it?)",
			joinParts(parts), u.Files, u.Bytes, info.Files, info.Bytes)
	}
	return c.retry(ctx, "mark", dataset, func(ctx context.Context) error {
		return markScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, []any{now(), info.Files, info.Bytes}, parts)...).Err()
	})
}

// Walk calls fn for p and, if it is a directory, everything under it,
// depth first in name order (parents before children). Paths passed to
// fn are absolute ("/a/b").
func (c *Client) Walk(ctx context.Context, p string, fn func(p string, a Attr) error) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	p = "/" + joinParts(parts)
	a, err := c.Stat(ctx, p)
	if err != nil {
		return err
	}
	return c.walk(ctx, p, a, fn)
}

func (c *Client) walk(ctx context.Context, p string, a Attr, fn func(string, Attr) error) error {
	if err := fn(p, a); err != nil || !a.Dir {
		return err
	}
	ents, err := c.ReadDirIno(ctx, a.Ino)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := c.walk(ctx, path.Join(p, e.Name), e.Attr, fn); err != nil {
			return err
		}
	}
	return nil
}

// Usage is what Du counts.
type Usage struct{ Files, Dirs, Bytes int64 }

// Du adds up the files, directories and bytes under p (p included).
func (c *Client) Du(ctx context.Context, p string) (Usage, error) {
	var u Usage
	err := c.Walk(ctx, p, func(_ string, a Attr) error {
		if a.Dir {
			u.Dirs++
		} else {
			u.Files++
			u.Bytes += a.Size
		}
		return nil
	})
	return u, err
}

// RemoveAll removes p and everything under it; a missing p is no error.
func (c *Client) RemoveAll(ctx context.Context, p string) error {
	var dirs []string
	err := c.Walk(ctx, p, func(q string, a Attr) error {
		if a.Dir {
			dirs = append(dirs, q)
			return nil
		}
		return c.Remove(ctx, q)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		if dirs[i] != "/" {
			err = c.Rmdir(ctx, dirs[i])
		}
	}
	return err
}

// Copy copies dataset from src to dst (two Redis servers) and marks it
// complete there: what the coordinator does to warm a cluster's cache.
// The dataset must be complete in src; whatever dst held under that name
// is replaced, under dst's write lease for the dataset (a *BusyError if
// another put or copy holds it). progress (may be nil) gets the bytes
// copied as they go.
func Copy(ctx context.Context, src, dst *Client, dataset string, progress func(int64)) (DatasetInfo, error) {
	return CopyFiles(ctx, src, dst, dataset, progress, nil)
}

// CopyFiles is Copy that also calls file (may be nil; never concurrently)
// after each file is copied whole, so a caller can count files as well as
// bytes.
func CopyFiles(ctx context.Context, src, dst *Client, dataset string, progress func(int64), file func()) (info DatasetInfo, err error) {
	info, ok, err := src.Complete(ctx, dataset)
	if err != nil {
		return info, err
	}
	if !ok {
		return info, fmt.Errorf("copy %s: not complete in redis %s: load it first (atom cache put)", dataset, src.Addr())
	}
	l, err := dst.Acquire(ctx, dataset)
	if err != nil {
		return info, err
	}
	defer l.Release()
	defer func() {
		if lost := l.Err(); err != nil && lost != nil {
			err = lost
		}
	}()
	ctx = l.Context()
	if err := dst.RemoveAll(ctx, dataset); err != nil {
		return info, err
	}
	progress = serial(progress)
	done := func() {}
	if file != nil {
		var mu sync.Mutex
		done = func() { mu.Lock(); defer mu.Unlock(); file() }
	}
	var files []fileCopy
	err = src.Walk(ctx, dataset, func(p string, a Attr) error {
		if a.Dir {
			_, err := dst.MkdirAll(ctx, p, a.Mode)
			return err
		}
		files = append(files, fileCopy{p, a})
		return nil
	})
	if err != nil {
		return info, err
	}
	err = parallel(ctx, len(files), func(ctx context.Context, i int) error {
		f := files[i]
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(src.ReadTo(ctx, f.a, pw, progress)) }()
		_, err := dst.WriteFrom(ctx, f.p, pr, f.a.Mode, nil)
		pr.CloseWithError(err)
		if err == nil {
			done()
		}
		return err
	})
	if err != nil {
		return info, err
	}
	return info, dst.MarkComplete(ctx, dataset, info)
}

type fileCopy struct {
	p string
	a Attr
}

// serial makes progress safe to call from the transfer workers: the
// caller's function is never called concurrently.
func serial(progress func(int64)) func(int64) {
	if progress == nil {
		return nil
	}
	var mu sync.Mutex
	return func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		progress(n)
	}
}

// transferWorkers is how many files a bulk transfer moves at once: many
// small files need parallel round trips; big ones pipeline by themselves.
const transferWorkers = 8

// parallel runs fn(0..n-1) on transferWorkers goroutines and returns the
// first error; after one, the rest are cancelled.
func parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range min(n, transferWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
