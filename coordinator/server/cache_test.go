package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/structs"
)

// silentRedis accepts connections and never answers: a Redis that hangs.
func silentRedis(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// The leader's cache checks: what a cluster's Redis holds is asked once
// and trusted for CacheCheckTTL (by the injected clock); a Redis that does
// not answer counts as holding nothing after CacheCheckTimeout, and is not
// asked again within the TTL.
func TestCachePresenceCachedAndBounded(t *testing.T) {
	ra := cachetest.StartRedis(t)
	hung := silentRedis(t)
	ctx := context.Background()
	ca, err := cache.New(cache.Options{Addr: ra.Addr})
	require.NoError(t, err)
	defer ca.Close()
	require.NoError(t, ca.Init(ctx))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	_, err = ca.Put(ctx, dir, "lidar/x", nil)
	require.NoError(t, err)

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.cfg = Config{CacheCheckTTL: 30 * time.Second, CacheCheckTimeout: time.Second, Clock: func() time.Time { return now }}
	c := newCaches(s)
	defer c.close()
	view := map[structs.ClusterID]string{"a": ra.Addr, "b": hung, "c": ""} // c: no cache
	pending := []*structs.Job{{ID: "j", Datasets: []string{"lidar/x", "video/y"}}, {ID: "k"}}

	start := time.Now()
	got := c.presence(ctx, view, pending)
	took := time.Since(start)
	want := map[structs.ClusterID]map[string]bool{"a": {"lidar/x": true}, "b": {}}
	assert.Equal(t, want, got)
	assert.GreaterOrEqual(t, took, time.Second, "the hung Redis was asked")
	assert.Less(t, took, 4*time.Second, "a hung Redis is waited for at most the bound")

	// Within the TTL nothing is asked again: the hung Redis costs nothing,
	// and a's answer stands although the dataset is gone now.
	require.NoError(t, ca.RemoveAll(ctx, "lidar/x"))
	now = now.Add(29 * time.Second)
	start = time.Now()
	assert.Equal(t, want, c.presence(ctx, view, pending))
	assert.Less(t, time.Since(start), time.Second, "the hung Redis is not waited for again")

	// After the TTL, a is asked again.
	now = now.Add(time.Second)
	assert.Equal(t, map[structs.ClusterID]map[string]bool{"a": {}, "b": {}}, c.presence(ctx, view, pending))

	// No pending job names a dataset: nothing to ask.
	assert.Nil(t, c.presence(ctx, view, pending[1:]))
}
