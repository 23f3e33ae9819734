package cache_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

func newClient(t *testing.T, s *cachetest.Server, o cache.Options) *cache.Client {
	t.Helper()
	o.Addr = s.Addr
	c, err := cache.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Init(context.Background()))
	return c
}

func TestMetadata(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, cachetest.StartRedis(t), cache.Options{ChunkSize: 4})
	_, err := c.Mkdir(ctx, "/a", 0o755)
	require.NoError(t, err)
	_, err = c.Mkdir(ctx, "/a", 0o755)
	assert.ErrorIs(t, err, syscall.EEXIST)
	_, err = c.Stat(ctx, "/nope/x")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, c.WriteFile(ctx, "/a/f", []byte("hello, world"), 0o640))
	a, err := c.Stat(ctx, "a/f")
	require.NoError(t, err)
	assert.Equal(t, int64(12), a.Size)
	assert.Equal(t, fs.FileMode(0o640), a.Mode)
	_, err = c.Stat(ctx, "/a/f/x")
	assert.ErrorIs(t, err, syscall.ENOTDIR)

	// Sparse writes read as zeros; truncate cuts and regrowth reads zeros.
	_, err = c.WriteAt(ctx, a.Ino, a.Chunk, 14, []byte("!"))
	require.NoError(t, err)
	got, err := c.ReadFile(ctx, "/a/f")
	require.NoError(t, err)
	assert.Equal(t, []byte("hello, world\x00\x00!"), got)
	require.NoError(t, c.Truncate(ctx, "/a/f", 5))
	require.NoError(t, c.Truncate(ctx, "/a/f", 7))
	got, err = c.ReadFile(ctx, "/a/f")
	require.NoError(t, err)
	assert.Equal(t, []byte("hello\x00\x00"), got)

	// Rename replaces files, refuses moving a directory into itself.
	require.NoError(t, c.WriteFile(ctx, "/a/g", []byte("g"), 0o644))
	require.NoError(t, c.Rename(ctx, "/a/g", "/a/f"))
	got, err = c.ReadFile(ctx, "/a/f")
	require.NoError(t, err)
	assert.Equal(t, []byte("g"), got)
	assert.ErrorIs(t, c.Rename(ctx, "/a", "/a/b"), syscall.EINVAL)
	assert.ErrorIs(t, c.Rmdir(ctx, "/a"), syscall.ENOTEMPTY)
	assert.ErrorIs(t, c.Remove(ctx, "/a"), syscall.EISDIR)
	ents, err := c.ReadDir(ctx, "/a")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, "f", ents[0].Name)
	require.NoError(t, c.RemoveAll(ctx, "/a"))
	_, err = c.Stat(ctx, "/a")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	// The removed file's chunks are gone.
	n, err := c.Redis().Exists(ctx, c.ChunkKey(a.Ino, 0)).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Two clients race to create the same name exclusively: one wins.
// Disjoint concurrent writes to one file both land.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := cachetest.StartRedis(t)
	c1, c2 := newClient(t, s, cache.Options{ChunkSize: 1 << 10}), newClient(t, s, cache.Options{})
	for i := range 20 {
		p := "/race" + string(rune('a'+i))
		var wins, exists int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range []*cache.Client{c1, c2, c1, c2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, created, err := c.Create(ctx, p, 0o644, true)
				mu.Lock()
				defer mu.Unlock()
				if err == nil && created {
					wins++
				} else if errors.Is(err, syscall.EEXIST) {
					exists++
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, 1, wins, p)
		assert.Equal(t, 3, exists, p)
	}
	a, _, err := c1.Create(ctx, "/shared", 0o644, false)
	require.NoError(t, err)
	part := func(b byte) []byte { return bytes.Repeat([]byte{b}, 3000) }
	var wg sync.WaitGroup
	for i, c := range []*cache.Client{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.WriteAt(ctx, a.Ino, a.Chunk, int64(i)*3000, part(byte('x'+i)))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	got, err := c2.ReadFile(ctx, "/shared")
	require.NoError(t, err)
	assert.Equal(t, append(part('x'), part('y')...), got)
}

func TestDatasetMarkerPutGetCopy(t *testing.T) {
	ctx := context.Background()
	a := newClient(t, cachetest.StartRedis(t), cache.Options{ChunkSize: 1000})
	b := newClient(t, cachetest.StartRedis(t), cache.Options{})
	local := t.TempDir()
	want := map[string][]byte{}
	for _, name := range []string{"f1", "sub/f2", "sub/deeper/f3", "empty"} {
		data := make([]byte, len(name)*1777%5000)
		_, _ = rand.Read(data)
		want[name] = data
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(local, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(local, name), data, 0o644))
	}
	_, ok, err := a.Complete(ctx, "lidar/2024-05")
	require.NoError(t, err)
	assert.False(t, ok, "nothing loaded yet")

	info, err := a.Put(ctx, local, "lidar/2024-05", nil)
	require.NoError(t, err)
	got, ok, err := a.Complete(ctx, "lidar/2024-05")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(4), got.Files)
	assert.Equal(t, info.Bytes, got.Bytes)

	// Copy to the second server, then read everything back from it.
	var copied, files int64
	_, err = cache.CopyFiles(ctx, a, b, "lidar/2024-05", func(n int64) { copied += n }, func() { files++ })
	require.NoError(t, err)
	assert.Equal(t, info.Bytes, copied)
	assert.Equal(t, int64(4), files)
	_, ok, err = b.Complete(ctx, "lidar/2024-05")
	require.NoError(t, err)
	assert.True(t, ok)
	out := t.TempDir()
	require.NoError(t, b.Get(ctx, "lidar/2024-05", out, nil))
	for name, data := range want {
		g, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		assert.Equal(t, data, g, name)
	}

	// A change below the dataset clears its marker (and its parents').
	require.NoError(t, b.WriteFile(ctx, "/lidar/2024-05/sub/new", []byte("x"), 0o644))
	_, ok, err = b.Complete(ctx, "lidar/2024-05")
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = cache.Copy(ctx, b, a, "lidar/2024-05", nil)
	assert.ErrorContains(t, err, "not complete")
}

// Redis that stops answering gives ErrUnavailable within the bound; the
// same client works again once Redis is back.
func TestUnavailableIsBounded(t *testing.T) {
	ctx := context.Background()
	s := cachetest.StartRedis(t)
	c := newClient(t, s, cache.Options{Timeout: time.Second})
	require.NoError(t, c.WriteFile(ctx, "/f", []byte("data"), 0o644))
	for _, stop := range []struct {
		name       string
		stop, back func()
	}{{"paused", s.Pause, s.Resume}, {"stopped", s.Stop, s.Restart}} {
		t.Run(stop.name, func(t *testing.T) {
			stop.stop()
			start := time.Now()
			_, err := c.ReadFile(ctx, "/f")
			assert.ErrorIs(t, err, cache.ErrUnavailable)
			assert.Less(t, time.Since(start), 3*time.Second)
			stop.back()
			got, err := c.ReadFile(ctx, "/f")
			require.NoError(t, err)
			assert.Equal(t, []byte("data"), got)
		})
	}
}
