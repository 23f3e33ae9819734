package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults of Options.
const (
	DefaultPrefix    = "atom:"
	DefaultChunkSize = 1 << 20
	DefaultTimeout   = 10 * time.Second
	// LayoutVersion is stored under PREFIX+"layout"; a Redis holding
	// another version is refused rather than misread.
	LayoutVersion = "1"
)

// ErrUnavailable is wrapped by every error that comes from Redis being
// unreachable (refused, timed out, reset) for longer than the bound: an
// *UnavailableError (errors.go) says which Redis, doing what, and why.
var ErrUnavailable = errors.New("not reachable")

// Options configure a Client. Only Addr is required.
type Options struct {
	Addr      string        // host:port of a standalone Redis server
	Prefix    string        // key prefix; default DefaultPrefix
	ChunkSize int64         // chunk size of new files; default DefaultChunkSize
	Timeout   time.Duration // bound on one operation, retries included; default DefaultTimeout
	PoolSize  int           // Redis connections; default go-redis's (10 per CPU)
}

// Client reads and writes the cache's file tree in one Redis server. It is
// safe for concurrent use; every method returns within Options.Timeout (or
// the context's deadline, if sooner).
type Client struct {
	rdb  *redis.Client
	opts Options
	// refused is the client's latest network error that is no timeout
	// (a refusal, a reset), with when it came: an operation that saw
	// only timeouts (go-redis making it wait while it dials again) says
	// that cause when it is recent.
	refused atomic.Pointer[netError]
}

type netError struct {
	err error
	at  time.Time
}

// New returns a client for opts.Addr. It does not contact Redis.
func New(opts Options) (*Client, error) {
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("cache redis address %q: use host:port", opts.Addr)
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	quiet.Do(func() { redis.SetLogger(silent{}) })
	rdb := redis.NewClient(&redis.Options{
		Addr: opts.Addr, PoolSize: opts.PoolSize, Protocol: 2, DisableIdentity: true,
		DialTimeout: min(opts.Timeout, 2*time.Second), ReadTimeout: opts.Timeout, WriteTimeout: opts.Timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, // c.retry retries, within the bound
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	return &Client{rdb: rdb, opts: opts}, nil
}

// quiet silences go-redis's own log lines (failed dials during an
// outage): this package reports errors to its callers instead.
var quiet sync.Once

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// Redis is the underlying go-redis client, for callers that read chunks
// themselves (see ChunkKey).
func (c *Client) Redis() *redis.Client { return c.rdb }

// Addr is the Redis server's host:port.
func (c *Client) Addr() string { return c.opts.Addr }

// Close closes the connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Init checks the layout version, writing it into an empty Redis, and
// creates the root directory. Call it once before mounting or loading.
func (c *Client) Init(ctx context.Context) error {
	return c.retry(ctx, "init", "/", func(ctx context.Context) error {
		ok, err := c.rdb.SetNX(ctx, c.opts.Prefix+"layout", LayoutVersion, 0).Result()
		if err != nil || ok {
			return err
		}
		v, err := c.rdb.Get(ctx, c.opts.Prefix+"layout").Result()
		if err == nil && v != LayoutVersion {
			return fmt.Errorf("redis %s holds cache layout %q under %q, not %q: use another prefix or server", c.opts.Addr, v, c.opts.Prefix, LayoutVersion)
		}
		return err
	})
}

// ChunkKey is the key of chunk n of inode ino: a string holding bytes
// [n*chunk, (n+1)*chunk) of the file; missing or short means zeros.
func (c *Client) ChunkKey(ino uint64, n int64) string {
	return c.opts.Prefix + "c:" + strconv.FormatUint(ino, 10) + ":" + strconv.FormatInt(n, 10)
}

func (c *Client) inodeKey(ino uint64) string {
	return c.opts.Prefix + "i:" + strconv.FormatUint(ino, 10)
}

func (c *Client) dirKey(ino uint64) string {
	return c.opts.Prefix + "d:" + strconv.FormatUint(ino, 10)
}

// retry runs fn until it succeeds, fails for a reason other than the
// network, or the bound passes: a short Redis outage (restart, failover)
// is ridden out, a long one becomes ErrUnavailable, never a hang.
func (c *Client) retry(ctx context.Context, op, p string, fn func(context.Context) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	var last error // the last network error, not the bound's end
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if e := errnoOf(err); e != 0 {
			return &fs.PathError{Op: op, Path: p, Err: e}
		}
		if !transient(err) {
			return fmt.Errorf("%s: %w", doing(op, p), err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			last = err
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				c.refused.Store(&netError{err, time.Now()})
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			if r := c.refused.Load(); last == nil && r != nil && time.Since(r.at) < 2*c.opts.Timeout {
				last = r.err
			}
			return &UnavailableError{Addr: c.opts.Addr, Doing: doing(op, p), For: min(c.opts.Timeout, time.Since(start).Round(100*time.Millisecond)), Cause: last}
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// transient tells network trouble (worth retrying) from a reply.
func transient(err error) bool {
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "BUSY") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	return true // dial, read, write, timeouts, closed pool connections
}

var errnos = map[string]syscall.Errno{
	"ENOENT": syscall.ENOENT, "EEXIST": syscall.EEXIST, "ENOTDIR": syscall.ENOTDIR,
	"EISDIR": syscall.EISDIR, "ENOTEMPTY": syscall.ENOTEMPTY, "EINVAL": syscall.EINVAL,
	"EBUSY": syscall.EBUSY,
}

// errnoOf maps a script's error reply to its errno; 0 for anything else.
func errnoOf(err error) syscall.Errno {
	var re redis.Error
	if errors.As(err, &re) {
		return errnos[strings.TrimPrefix(re.Error(), "ERR ")]
	}
	return 0
}

// split turns "/a/b" or "a/b" into its components; "" and "/" are the
// root. ".." and empty components are refused.
func split(p string) ([]string, error) {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return nil, nil
	}
	parts := strings.Split(p, "/")
	for _, s := range parts {
		if s == ".." || s == "." || s == "" {
			return nil, &fs.PathError{Op: "path", Path: p, Err: syscall.EINVAL}
		}
	}
	return parts, nil
}

func joinParts(parts []string) string { return strings.Join(parts, "/") }

// isErrno tells whether err carries errno e.
func isErrno(err error, e syscall.Errno) bool { return errors.Is(err, e) }

func args(prefix string, head []any, parts []string) []any {
	out := append([]any{prefix}, head...)
	for _, s := range parts {
		out = append(out, s)
	}
	return out
}

func now() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }
