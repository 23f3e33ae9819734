package cache

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// Put loads local (a file or a directory tree) into the cache at remote,
// replacing what was there. A directory is loaded as a dataset: Put takes
// its write lease (a *BusyError if another put or warm-up holds it),
// removes remote, fills it, then marks it complete with the count of
// files and bytes (MarkComplete checks they are all there). progress (may
// be nil; never called concurrently) gets bytes as they are sent.
func (c *Client) Put(ctx context.Context, local, remote string, progress func(int64)) (info DatasetInfo, err error) {
	st, err := os.Stat(local)
	if err != nil {
		return info, err
	}
	if !st.IsDir() {
		if _, err := c.MkdirAll(ctx, path.Dir(path.Join("/", remote)), 0o755); err != nil {
			return info, err
		}
		return info, c.putFile(ctx, local, remote, st.Mode(), progress)
	}
	l, err := c.Acquire(ctx, remote)
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
	if err := c.RemoveAll(ctx, remote); err != nil {
		return info, err
	}
	progress = serial(progress)
	type file struct {
		local, remote string
		mode          fs.FileMode
	}
	var files []file
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		rp := path.Join("/", remote, filepath.ToSlash(rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			_, err = c.MkdirAll(ctx, rp, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			files = append(files, file{p, rp, fi.Mode().Perm()})
			info.Files++
			info.Bytes += fi.Size()
		} // sockets, devices and symlinks are skipped
		return err
	})
	if err != nil {
		return info, err
	}
	err = parallel(ctx, len(files), func(ctx context.Context, i int) error {
		return c.putFile(ctx, files[i].local, files[i].remote, files[i].mode, progress)
	})
	if err != nil {
		return info, err
	}
	info.At = time.Now()
	return info, c.MarkComplete(ctx, remote, info)
}

func (c *Client) putFile(ctx context.Context, local, remote string, mode fs.FileMode, progress func(int64)) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = c.WriteFrom(ctx, remote, f, mode.Perm(), progress)
	return err
}

// Get copies remote (a file or a directory tree) to local. progress (may
// be nil) gets bytes as they arrive.
func (c *Client) Get(ctx context.Context, remote, local string, progress func(int64)) error {
	parts, err := split(remote)
	if err != nil {
		return err
	}
	base := "/" + joinParts(parts)
	progress = serial(progress)
	var files []fileCopy
	err = c.Walk(ctx, base, func(p string, a Attr) error {
		rel := p[len(base):]
		lp := filepath.Join(local, filepath.FromSlash(rel))
		if a.Dir {
			return os.MkdirAll(lp, a.Mode|0o700)
		}
		files = append(files, fileCopy{p, a})
		return nil
	})
	if err != nil {
		return err
	}
	return parallel(ctx, len(files), func(ctx context.Context, i int) error {
		f := files[i]
		lp := filepath.Join(local, filepath.FromSlash(f.p[len(base):]))
		out, err := os.OpenFile(lp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, f.a.Mode|0o600)
		if err != nil {
			return err
		}
		if err := c.ReadTo(ctx, f.a, out, progress); err != nil {
			out.Close()
			return fmt.Errorf("get %s: %w", f.p, err)
		}
		return out.Close()
	})
}
