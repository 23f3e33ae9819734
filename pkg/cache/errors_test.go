package cache_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

// An unreachable Redis is named once, with the operation in words and
// the network's reason (or "no reply" when it just does not answer).
func TestUnavailableSaysWhy(t *testing.T) {
	ctx := context.Background()
	s := cachetest.StartRedis(t)
	c := newClient(t, s, cache.Options{Timeout: 500 * time.Millisecond})
	require.NoError(t, c.WriteFile(ctx, "/f", []byte("data"), 0o644))
	a, err := c.Stat(ctx, "/f")
	require.NoError(t, err)

	s.Pause()
	_, err = c.Chunk(ctx, a.Ino, 0)
	assert.EqualError(t, err, "redis "+s.Addr+" not reachable for 500ms while reading file data: no reply")
	_, err = c.Stat(ctx, "/f")
	assert.EqualError(t, err, "redis "+s.Addr+" not reachable for 500ms while looking up /f: no reply")
	s.Resume()

	s.Stop()
	err = c.Init(ctx)
	assert.EqualError(t, err, "redis "+s.Addr+" not reachable for 500ms while checking the cache's layout: connection refused")
	assert.ErrorIs(t, err, cache.ErrUnavailable)
	var errno syscall.Errno
	assert.False(t, errors.As(err, &errno), "the network's ECONNREFUSED is no file system errno: the mount gives EIO")
	_, err = c.Mkdir(ctx, "/d", 0o755)
	assert.EqualError(t, err, "redis "+s.Addr+" not reachable for 500ms while making directory /d: connection refused")
	s.Restart()
	require.NoError(t, c.Init(ctx))
}
