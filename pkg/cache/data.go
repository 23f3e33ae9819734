package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// streamWindow is how many chunks a bulk transfer keeps in flight.
const streamWindow = 8

// WriteAt writes p at offset off of file ino (chunk size chunk): per
// chunk touched, one round trip with the chunk's bytes (SET for a whole
// chunk, SETRANGE for part of one) and a script that grows the size to
// cover them. Writers of disjoint ranges never undo each other. It
// returns the file's size after the last piece.
func (c *Client) WriteAt(ctx context.Context, ino uint64, chunk, off int64, p []byte) (int64, error) {
	var size int64
	for len(p) > 0 {
		n, in := off/chunk, off%chunk
		piece := p[:min(int64(len(p)), chunk-in)]
		err := c.retry(ctx, "write", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
			cmds, err := c.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
				if in == 0 && int64(len(piece)) == chunk {
					pl.Set(ctx, c.ChunkKey(ino, n), piece, 0) // far cheaper than SETRANGE
				} else {
					pl.SetRange(ctx, c.ChunkKey(ino, n), in, string(piece))
				}
				pl.EvalSha(ctx, growScript.Hash(), nil, c.opts.Prefix, now(), ino, off+int64(len(piece)), n)
				return nil
			})
			if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				if err = growScript.Load(ctx, c.rdb).Err(); err == nil {
					err = errNoScript // loaded: run the pair again
				}
				return err
			}
			if err == nil {
				size, err = strconv.ParseInt(cmds[1].(*redis.Cmd).Val().(string), 10, 64)
			}
			return err
		})
		if err != nil {
			return size, err
		}
		p, off = p[len(piece):], off+int64(len(piece))
	}
	return size, nil
}

// errNoScript makes retry run a pipeline again once its script is loaded
// (Redis restarted and lost its script cache).
var errNoScript = errors.New("script reloaded")

// Chunks fetches chunks first..first+n-1 of inode ino in one pipeline;
// a missing chunk comes back nil (a hole: zeros).
func (c *Client) Chunks(ctx context.Context, ino uint64, first, n int64) ([][]byte, error) {
	out := make([][]byte, n)
	err := c.retry(ctx, "read", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
		if n == 1 { // the common case, without a pipeline's bookkeeping
			b, err := c.rdb.Get(ctx, c.ChunkKey(ino, first)).Bytes()
			if errors.Is(err, redis.Nil) {
				err = nil
			}
			out[0] = b
			return err
		}
		cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				p.Get(ctx, c.ChunkKey(ino, first+i))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for i, cmd := range cmds {
			out[i], _ = cmd.(*redis.StringCmd).Bytes()
		}
		return nil
	})
	return out, err
}

// Chunk fetches chunk n of inode ino as go-redis read it, without the
// copy a []byte would cost; "" for a hole (zeros).
func (c *Client) Chunk(ctx context.Context, ino uint64, n int64) (string, error) {
	var s string
	err := c.retry(ctx, "read", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
		var err error
		if s, err = c.rdb.Get(ctx, c.ChunkKey(ino, n)).Result(); errors.Is(err, redis.Nil) {
			s, err = "", nil
		}
		return err
	})
	return s, err
}

// ChunkRange fetches n bytes at offset off of chunk idx (GETRANGE): for
// small random reads. It may return fewer bytes (the rest are zeros).
func (c *Client) ChunkRange(ctx context.Context, ino uint64, idx, off, n int64) ([]byte, error) {
	var b []byte
	err := c.retry(ctx, "read", "#"+strconv.FormatUint(ino, 10), func(ctx context.Context) error {
		var err error
		b, err = c.rdb.GetRange(ctx, c.ChunkKey(ino, idx), off, off+n-1).Bytes()
		return err
	})
	return b, err
}

// ReadTo streams file a's content to w, streamWindow chunks per round
// trip, calling progress with each piece's length (progress may be nil).
func (c *Client) ReadTo(ctx context.Context, a Attr, w io.Writer, progress func(int64)) error {
	if a.Dir {
		return &fs.PathError{Op: "read", Path: "#" + strconv.FormatUint(a.Ino, 10), Err: syscall.EISDIR}
	}
	zero := make([]byte, a.Chunk)
	for first := int64(0); first*a.Chunk < a.Size; first += streamWindow {
		n := min(streamWindow, (a.Size+a.Chunk-1)/a.Chunk-first)
		chunks, err := c.Chunks(ctx, a.Ino, first, n)
		if err != nil {
			return err
		}
		for i, b := range chunks {
			want := min(a.Chunk, a.Size-(first+int64(i))*a.Chunk)
			b = b[:min(int64(len(b)), want)]
			if _, err := w.Write(b); err != nil {
				return err
			}
			if pad := want - int64(len(b)); pad > 0 {
				if _, err := w.Write(zero[:pad]); err != nil {
					return err
				}
			}
			if progress != nil {
				progress(want)
			}
		}
	}
	return nil
}

// WriteFrom creates (or truncates) file p and fills it from r, with
// streamWindow chunks per round trip; the size is set once all data is
// in, so a reader never sees a partly written chunk counted in the size.
func (c *Client) WriteFrom(ctx context.Context, p string, r io.Reader, perm fs.FileMode, progress func(int64)) (int64, error) {
	a, created, err := c.Create(ctx, p, perm, false)
	if err != nil {
		return 0, err
	}
	if !created && a.Size > 0 {
		if err := c.Truncate(ctx, p, 0); err != nil {
			return 0, err
		}
	}
	var total int64
	buf := make([]byte, streamWindow*a.Chunk)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			data := buf[:n]
			err := c.retry(ctx, "write", p, func(ctx context.Context) error {
				_, err := c.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
					for i := int64(0); i*a.Chunk < int64(len(data)); i++ {
						pl.Set(ctx, c.ChunkKey(a.Ino, total/a.Chunk+i), data[i*a.Chunk:min((i+1)*a.Chunk, int64(len(data)))], 0)
					}
					return nil
				})
				return err
			})
			if err != nil {
				return total, err
			}
			total += int64(n)
			if progress != nil {
				progress(int64(n))
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return total, rerr
		}
	}
	return total, c.retry(ctx, "write", p, func(ctx context.Context) error {
		return growScript.Run(ctx, c.rdb, nil, c.opts.Prefix, now(), a.Ino, total, -1).Err()
	})
}

// ReadFile returns file p's content.
func (c *Client) ReadFile(ctx context.Context, p string) ([]byte, error) {
	a, err := c.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(int(a.Size))
	err = c.ReadTo(ctx, a, &b, nil)
	return b.Bytes(), err
}

// WriteFile creates or replaces file p's content with data.
func (c *Client) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	_, err := c.WriteFrom(ctx, p, bytes.NewReader(data), perm, nil)
	return err
}
