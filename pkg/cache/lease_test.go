package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

// dir writes n files of size bytes each (in two subdirectories).
func dir(t *testing.T, n, size int) string {
	t.Helper()
	d := t.TempDir()
	for i := range n {
		sub := filepath.Join(d, fmt.Sprintf("s%d", i%2))
		require.NoError(t, os.MkdirAll(sub, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", i)), make([]byte, size), 0o644))
	}
	return d
}

// Of two puts of one dataset at once, the second gets a clear error and
// changes nothing; the first completes with the right counts; after it
// ends the dataset can be written again.
func TestConcurrentPutsOneWriter(t *testing.T) {
	ctx := context.Background()
	r := cachetest.StartRedis(t)
	a := newClient(t, r, cache.Options{})
	b := newClient(t, r, cache.Options{})
	local := dir(t, 200, 10)

	started, resume := make(chan struct{}), make(chan struct{})
	first := true
	errc := make(chan error, 1)
	var info cache.DatasetInfo
	go func() {
		var err error
		info, err = a.Put(ctx, local, "race/d", func(int64) {
			if first {
				first = false
				close(started)
				<-resume
			}
		})
		errc <- err
	}()
	<-started
	_, err := b.Put(ctx, dir(t, 3, 1), "race/d", nil)
	var busy *cache.BusyError
	require.ErrorAs(t, err, &busy)
	assert.ErrorIs(t, err, cache.ErrBusy)
	assert.Equal(t, "race/d", busy.Dataset)
	assert.WithinDuration(t, time.Now(), busy.Since, time.Minute)
	assert.Equal(t, "dataset race/d is being written by another put or warm-up since "+busy.Since.UTC().Format(time.RFC3339)+"; try again when it ends", err.Error())
	// A copy into the dataset is refused the same way.
	src := newClient(t, cachetest.StartRedis(t), cache.Options{})
	_, err = src.Put(ctx, dir(t, 2, 5), "race/d", nil)
	require.NoError(t, err)
	_, err = cache.Copy(ctx, src, b, "race/d", nil)
	require.ErrorAs(t, err, &busy)
	close(resume)
	require.NoError(t, <-errc)
	assert.Equal(t, int64(200), info.Files)

	got, ok, err := b.Complete(ctx, "race/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 200, Bytes: 2000, At: got.At}, got)
	u, err := b.Du(ctx, "race/d")
	require.NoError(t, err)
	assert.Equal(t, cache.Usage{Files: 200, Dirs: 3, Bytes: 2000}, u)

	// The lease went with the put: the next writer gets it.
	_, err = cache.Copy(ctx, src, b, "race/d", nil)
	require.NoError(t, err)
	got, ok, err = b.Complete(ctx, "race/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 2, Bytes: 10, At: got.At}, got)
	n, err := b.Redis().Exists(ctx, "atom:lease:race/d").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the lease key is deleted at the end")
}

// Two puts started together, with no help: exactly one succeeds, the
// other gets ErrBusy, and the marker matches what is there.
func TestConcurrentPutsRace(t *testing.T) {
	ctx := context.Background()
	r := cachetest.StartRedis(t)
	local := dir(t, 300, 3)
	errs := make(chan error, 2)
	start := make(chan struct{})
	for range 2 {
		c := newClient(t, r, cache.Options{})
		go func() {
			<-start
			_, err := c.Put(ctx, local, "race/d", func(int64) {})
			errs <- err
		}()
	}
	close(start)
	e1, e2 := <-errs, <-errs
	c := newClient(t, r, cache.Options{})
	got, ok, err := c.Complete(ctx, "race/d")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 300, Bytes: 900, At: got.At}, got)
	u, err := c.Du(ctx, "race/d")
	require.NoError(t, err)
	assert.Equal(t, int64(300), u.Files)
	// Both may succeed one after the other; never both fail, and a
	// failure is only ever the busy error.
	for _, e := range []error{e1, e2} {
		if e != nil {
			assert.ErrorIs(t, e, cache.ErrBusy)
		}
	}
	assert.False(t, e1 != nil && e2 != nil, "both puts failed: %v; %v", e1, e2)
}

// The marker is never set on a dataset that lacks what was written.
func TestMarkCompleteChecksCounts(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, cachetest.StartRedis(t), cache.Options{})
	info, err := c.Put(ctx, dir(t, 4, 10), "ds/x", nil)
	require.NoError(t, err)
	require.NoError(t, c.Remove(ctx, "ds/x/s0/f0")) // a file lost after the load
	err = c.MarkComplete(ctx, "ds/x", info)
	assert.EqualError(t, err, "dataset ds/x holds 3 files, 30 bytes, not the 4 files, 40 bytes written: not marked complete (did another writer change it?)")
	_, ok, err := c.Complete(ctx, "ds/x")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, c.MarkComplete(ctx, "ds/x", cache.DatasetInfo{Files: 3, Bytes: 30}))
	_, ok, err = c.Complete(ctx, "ds/x")
	require.NoError(t, err)
	assert.True(t, ok)
}

// A writer whose lease is taken from it (it expired: the writer stalled
// past LeaseTTL) sees its context cancelled and says why.
func TestLeaseLost(t *testing.T) {
	ttl := cache.LeaseTTL
	cache.LeaseTTL = 300 * time.Millisecond
	t.Cleanup(func() { cache.LeaseTTL = ttl })
	ctx := context.Background()
	c := newClient(t, cachetest.StartRedis(t), cache.Options{})
	acquired := time.Now()
	l, err := c.Acquire(ctx, "ds/y")
	require.NoError(t, err)
	defer l.Release()
	_, err = c.Acquire(ctx, "/ds/y/")
	require.ErrorIs(t, err, cache.ErrBusy)
	// Renewed: it outlives its TTL.
	require.Eventually(t, func() bool {
		n, err := c.Redis().Exists(ctx, "atom:lease:ds/y").Result()
		return err == nil && n == 1 && time.Since(acquired) > 3*cache.LeaseTTL && l.Context().Err() == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Redis().Set(ctx, "atom:lease:ds/y", "other 1", 0).Err())
	require.Eventually(t, func() bool { return l.Context().Err() != nil }, 5*time.Second, 10*time.Millisecond)
	assert.EqualError(t, l.Err(), "lost the write lease of ds/y: it expired and may be held by another writer")
	l.Release()
	v, err := c.Redis().Get(ctx, "atom:lease:ds/y").Result()
	require.NoError(t, err)
	assert.Equal(t, "other 1", v, "release deletes only its own lease")
	assert.False(t, errors.Is(l.Err(), cache.ErrBusy))
}
