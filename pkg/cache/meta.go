package cache

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Attr is one inode's attributes (the hash PREFIX+"i:"+ino).
type Attr struct {
	Ino   uint64
	Dir   bool
	Mode  fs.FileMode // permission bits only
	Size  int64       // files
	Chunk int64       // files: the chunk size the file was created with
	Mtime time.Time
	Ctime time.Time
	// Complete is set on a directory loaded as a whole dataset and not
	// changed since (see MarkComplete).
	Complete *DatasetInfo
}

// Entry is one name in a directory.
type Entry struct {
	Name string
	Attr
}

func parseAttr(ino uint64, kv []any) (Attr, error) {
	a := Attr{Ino: ino}
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	if len(m) == 0 {
		return a, syscall.ENOENT
	}
	return a, a.fill(m)
}

func (a *Attr) fill(m map[string]string) error {
	a.Dir = m["type"] == "dir"
	mode, err := strconv.ParseUint(m["mode"], 8, 32)
	if err != nil {
		return fmt.Errorf("inode %d: bad mode %q", a.Ino, m["mode"])
	}
	a.Mode = fs.FileMode(mode) & fs.ModePerm
	a.Size, _ = strconv.ParseInt(m["size"], 10, 64)
	a.Chunk, _ = strconv.ParseInt(m["chunk"], 10, 64)
	mt, _ := strconv.ParseInt(m["mtime"], 10, 64)
	ct, _ := strconv.ParseInt(m["ctime"], 10, 64)
	a.Mtime, a.Ctime = time.Unix(0, mt), time.Unix(0, ct)
	if at, ok := m["complete"]; ok {
		d := &DatasetInfo{}
		t, _ := strconv.ParseInt(at, 10, 64)
		d.At = time.Unix(0, t)
		d.Files, _ = strconv.ParseInt(m["files"], 10, 64)
		d.Bytes, _ = strconv.ParseInt(m["bytes"], 10, 64)
		a.Complete = d
	}
	if a.Dir {
		a.Size = 0
	}
	return nil
}

func toUint(v any) uint64 {
	switch x := v.(type) {
	case int64:
		return uint64(x)
	case string:
		n, _ := strconv.ParseUint(x, 10, 64)
		return n
	}
	return 0
}

// inodeReply decodes {ino, HGETALL...} from the stat and create scripts.
func inodeReply(v any) (Attr, error) {
	r, ok := v.([]any)
	if !ok || len(r) < 2 {
		return Attr{}, fmt.Errorf("unexpected script reply %v", v)
	}
	kv, _ := r[1].([]any)
	return parseAttr(toUint(r[0]), kv)
}

// Stat returns the attributes of the file or directory at p.
func (c *Client) Stat(ctx context.Context, p string) (Attr, error) {
	return c.stat(ctx, "stat", p, false)
}

// Dirty is Stat that also clears the completeness marker of every
// directory on the way: call it before writing to an existing file.
func (c *Client) Dirty(ctx context.Context, p string) (Attr, error) {
	return c.stat(ctx, "open", p, true)
}

func (c *Client) stat(ctx context.Context, op, p string, dirty bool) (Attr, error) {
	parts, err := split(p)
	if err != nil {
		return Attr{}, err
	}
	d := "0"
	if dirty {
		d = "1"
	}
	var a Attr
	err = c.retry(ctx, op, p, func(ctx context.Context) error {
		v, err := statScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, []any{now(), d}, parts)...).Result()
		if err == nil {
			a, err = inodeReply(v)
		}
		return err
	})
	return a, err
}

// StatIno returns inode ino's attributes (for an open file whose path may
// have changed).
func (c *Client) StatIno(ctx context.Context, ino uint64) (Attr, error) {
	var a Attr
	err := c.retry(ctx, "stat", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
		m, err := c.rdb.HGetAll(ctx, c.inodeKey(ino)).Result()
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return redis.Error(errENOENT)
		}
		a = Attr{Ino: ino}
		return a.fill(m)
	})
	return a, err
}

const errENOENT = proxyError("ENOENT")

type proxyError string

func (e proxyError) Error() string { return string(e) }
func (proxyError) RedisError()     {}

// ReadDir lists directory p, sorted by name, with each entry's attributes
// (one round trip for the names, one pipelined for the attributes).
func (c *Client) ReadDir(ctx context.Context, p string) ([]Entry, error) {
	a, err := c.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	if !a.Dir {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: syscall.ENOTDIR}
	}
	return c.ReadDirIno(ctx, a.Ino)
}

// ReadDirIno lists directory inode ino.
func (c *Client) ReadDirIno(ctx context.Context, ino uint64) ([]Entry, error) {
	var out []Entry
	err := c.retry(ctx, "readdir", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
		names, err := c.rdb.HGetAll(ctx, c.dirKey(ino)).Result()
		if err != nil {
			return err
		}
		out = out[:0]
		for name, child := range names {
			n, _ := strconv.ParseUint(child, 10, 64)
			out = append(out, Entry{Name: name, Attr: Attr{Ino: n}})
		}
		cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, e := range out {
				p.HGetAll(ctx, c.inodeKey(e.Ino))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, cmd := range cmds {
			m := cmd.(*redis.MapStringStringCmd).Val()
			if len(m) > 0 { // else removed meanwhile: keep the bare entry
				_ = out[i].fill(m)
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Create creates file p (mode perm) or, unless excl, opens the existing
// one; created says which. Its directory must exist.
func (c *Client) Create(ctx context.Context, p string, perm fs.FileMode, excl bool) (a Attr, created bool, err error) {
	return c.create(ctx, "create", p, "file", perm, excl)
}

// Mkdir creates directory p; EEXIST if the name is taken.
func (c *Client) Mkdir(ctx context.Context, p string, perm fs.FileMode) (Attr, error) {
	a, _, err := c.create(ctx, "mkdir", p, "dir", perm, true)
	return a, err
}

// MkdirAll creates p and its missing parents.
func (c *Client) MkdirAll(ctx context.Context, p string, perm fs.FileMode) (Attr, error) {
	parts, err := split(p)
	if err != nil {
		return Attr{}, err
	}
	a, err := c.Stat(ctx, "/")
	for i := range parts {
		sub := "/" + joinParts(parts[:i+1])
		if a, err = c.Stat(ctx, sub); err == nil && a.Dir {
			continue
		}
		if a, err = c.Mkdir(ctx, sub, perm); err != nil && !isErrno(err, syscall.EEXIST) {
			return a, err
		}
		if a, err = c.Stat(ctx, sub); err == nil && !a.Dir {
			return a, &fs.PathError{Op: "mkdir", Path: sub, Err: syscall.ENOTDIR}
		}
	}
	return a, err
}

func (c *Client) create(ctx context.Context, op, p, typ string, perm fs.FileMode, excl bool) (a Attr, created bool, err error) {
	parts, err := split(p)
	if err != nil {
		return Attr{}, false, err
	}
	x := "0"
	if excl {
		x = "1"
	}
	head := []any{now(), typ, strconv.FormatUint(uint64(perm&fs.ModePerm), 8), c.opts.ChunkSize, x}
	err = c.retry(ctx, op, p, func(ctx context.Context) error {
		v, err := createScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, head, parts)...).Result()
		if err != nil {
			return err
		}
		if a, err = inodeReply(v); err == nil {
			created = toUint(v.([]any)[2]) == 1
		}
		return err
	})
	return a, created, err
}

// Remove removes file p and its data.
func (c *Client) Remove(ctx context.Context, p string) error { return c.remove(ctx, "unlink", p, "0") }

// Rmdir removes empty directory p.
func (c *Client) Rmdir(ctx context.Context, p string) error { return c.remove(ctx, "rmdir", p, "1") }

func (c *Client) remove(ctx context.Context, op, p, dir string) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	return c.retry(ctx, op, p, func(ctx context.Context) error {
		return removeScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, []any{now(), dir}, parts)...).Err()
	})
}

// Rename moves from to to atomically, replacing a file or an empty
// directory there (POSIX rename).
func (c *Client) Rename(ctx context.Context, from, to string) error {
	s, err := split(from)
	if err != nil {
		return err
	}
	d, err := split(to)
	if err != nil {
		return err
	}
	head := []any{now(), len(s)}
	for _, x := range s {
		head = append(head, x)
	}
	return c.retry(ctx, "rename", from, func(ctx context.Context) error {
		return renameScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, head, d)...).Err()
	})
}

// Truncate sets file p's size, dropping data past it.
func (c *Client) Truncate(ctx context.Context, p string, size int64) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: p, Err: syscall.EINVAL}
	}
	return c.retry(ctx, "truncate", p, func(ctx context.Context) error {
		return truncateScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, []any{now(), size}, parts)...).Err()
	})
}

// Chmod sets p's permission bits.
func (c *Client) Chmod(ctx context.Context, p string, perm fs.FileMode) error {
	return c.setattr(ctx, "chmod", p, "mode", strconv.FormatUint(uint64(perm&fs.ModePerm), 8))
}

// SetMtime sets p's modification time.
func (c *Client) SetMtime(ctx context.Context, p string, t time.Time) error {
	return c.setattr(ctx, "utimens", p, "mtime", strconv.FormatInt(t.UnixNano(), 10))
}

func (c *Client) setattr(ctx context.Context, op, p, field, value string) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	return c.retry(ctx, op, p, func(ctx context.Context) error {
		return setattrScript.Run(ctx, c.rdb, nil, args(c.opts.Prefix, []any{now(), field, value}, parts)...).Err()
	})
}
