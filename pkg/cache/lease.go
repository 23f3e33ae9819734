package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseTTL is how long a dataset's write lease lasts unless renewed; a
// writer renews it every LeaseTTL/3, so a writer that dies (killed, its
// host gone) blocks others for at most LeaseTTL.
var LeaseTTL = 30 * time.Second

// ErrBusy is wrapped by the error a writer gets when another put or
// warm-up is writing the same dataset (see BusyError).
var ErrBusy = errors.New("dataset is being written")

// BusyError says which dataset is being written by another writer, and
// since when.
type BusyError struct {
	Dataset string
	Since   time.Time
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("dataset %s is being written by another put or warm-up since %s; try again when it ends",
		e.Dataset, e.Since.UTC().Format(time.RFC3339))
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// Lease is one writer's hold on a dataset: while it is held, no other
// Put or Copy writes the dataset. Context is cancelled if the lease is
// lost (not renewed in time), so the writer stops rather than interleave.
type Lease struct {
	c       *Client
	key     string
	val     string
	ctx     context.Context
	cancel  context.CancelFunc
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	lostErr error
}

// Context is cancelled when the lease is lost or released.
func (l *Lease) Context() context.Context { return l.ctx }

// Acquire takes dataset's write lease (key PREFIX+"lease:"+path, SET NX
// with a LeaseTTL expiry, renewed until Release). If another writer holds
// it, the error is a *BusyError. The lease's context derives from ctx.
func (c *Client) Acquire(ctx context.Context, dataset string) (*Lease, error) {
	parts, err := split(dataset)
	if err != nil {
		return nil, err
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	l := &Lease{c: c, key: c.opts.Prefix + "lease:" + joinParts(parts),
		val:  hex.EncodeToString(tok[:]) + " " + strconv.FormatInt(time.Now().UnixNano(), 10),
		stop: make(chan struct{}), done: make(chan struct{})}
	var held string
	err = c.retry(ctx, "lease", dataset, func(ctx context.Context) error {
		ok, err := c.rdb.SetNX(ctx, l.key, l.val, LeaseTTL).Result()
		if err != nil || ok {
			held = ""
			return err
		}
		held, err = c.rdb.Get(ctx, l.key).Result()
		if errors.Is(err, redis.Nil) { // released in between: retry takes it again
			return errLeaseRace
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if held != "" {
		since := time.Time{}
		if _, ns, ok := strings.Cut(held, " "); ok {
			if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
				since = time.Unix(0, n)
			}
		}
		return nil, &BusyError{Dataset: joinParts(parts), Since: since}
	}
	l.ctx, l.cancel = context.WithCancel(ctx)
	go l.renew()
	return l, nil
}

var errLeaseRace = errors.New("lease released while looked at")

var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

func (l *Lease) renew() {
	defer close(l.done)
	t := time.NewTicker(LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		var n int64
		err := l.c.retry(l.ctx, "lease", l.key, func(ctx context.Context) error {
			var err error
			n, err = renewScript.Run(ctx, l.c.rdb, []string{l.key}, l.val, LeaseTTL.Milliseconds()).Int64()
			return err
		})
		if err == nil && n == 0 {
			err = errors.New("it expired and may be held by another writer")
		}
		if err != nil && l.ctx.Err() == nil {
			l.lostErr = fmt.Errorf("lost the write lease of %s: %w", strings.TrimPrefix(l.key, l.c.opts.Prefix+"lease:"), err)
			l.cancel()
			return
		}
	}
}

// Err says why the lease's context ended early (the lease was lost), or nil.
func (l *Lease) Err() error {
	select {
	case <-l.done:
		return l.lostErr
	default:
		return nil
	}
}

// Release stops renewing and deletes the lease if it is still this
// writer's. It is safe to call more than once.
func (l *Lease) Release() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), l.c.opts.Timeout)
		defer cancel()
		_ = releaseScript.Run(ctx, l.c.rdb, []string{l.key}, l.val).Err()
	})
}
