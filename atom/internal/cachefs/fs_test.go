package cachefs_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/cachefs"
	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

// mount mounts srv's tree in a fresh directory until t ends.
func mount(t *testing.T, srv *cachetest.Server, timeout time.Duration) (string, *cache.Client) {
	t.Helper()
	if _, err := exec.LookPath("fusermount"); err != nil {
		t.Fatal("fusermount is not installed: run make test (it installs it) or apt-get install -y fuse3 libfuse-dev")
	}
	c, err := cache.New(cache.Options{Addr: srv.Addr, Timeout: timeout})
	require.NoError(t, err)
	require.NoError(t, c.Init(context.Background()))
	dir := filepath.Join(t.TempDir(), "mnt")
	m, err := cachefs.Mount(c, dir, cachefs.Options{Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, m.Unmount(30*time.Second))
		assert.False(t, mounted(t, dir), "still mounted after Unmount")
		c.Close()
	})
	require.True(t, mounted(t, dir))
	return dir, c
}

// mounted tells whether dir is a mount point (/proc/self/mountinfo).
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func TestOperationsBothWays(t *testing.T) {
	ctx := context.Background()
	dir, c := mount(t, cachetest.StartRedis(t), 0)

	// Through the mount, then read with the client.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lidar/2024-05"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lidar/2024-05/frame_001.bin"), []byte("points"), 0o644))
	got, err := c.ReadFile(ctx, "/lidar/2024-05/frame_001.bin")
	require.NoError(t, err)
	assert.Equal(t, []byte("points"), got)

	// With the client, then through the mount.
	require.NoError(t, c.WriteFile(ctx, "/lidar/2024-05/frame_002.bin", []byte("more points"), 0o600))
	b, err := os.ReadFile(filepath.Join(dir, "lidar/2024-05/frame_002.bin"))
	require.NoError(t, err)
	assert.Equal(t, []byte("more points"), b)
	st, err := os.Stat(filepath.Join(dir, "lidar/2024-05/frame_002.bin"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode())
	assert.Equal(t, int64(11), st.Size())

	ents, err := os.ReadDir(filepath.Join(dir, "lidar/2024-05"))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"frame_001.bin", "frame_002.bin"}, names)

	// Append, truncate, rename over, unlink, rmdir.
	p := filepath.Join(dir, "lidar/2024-05/frame_001.bin")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("+tail")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, _ = c.ReadFile(ctx, "/lidar/2024-05/frame_001.bin")
	assert.Equal(t, "points+tail", string(got))
	require.NoError(t, os.Truncate(p, 3))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "poi", string(b))
	require.NoError(t, os.Rename(p, filepath.Join(dir, "lidar/2024-05/frame_002.bin")))
	got, _ = c.ReadFile(ctx, "/lidar/2024-05/frame_002.bin")
	assert.Equal(t, "poi", string(got))
	require.NoError(t, os.Rename(filepath.Join(dir, "lidar/2024-05"), filepath.Join(dir, "lidar/renamed")))
	_, err = c.Stat(ctx, "/lidar/renamed/frame_002.bin")
	require.NoError(t, err)

	// errno: missing, exists, not empty, is a directory.
	_, err = os.Stat(filepath.Join(dir, "nope"))
	assert.ErrorIs(t, err, syscall.ENOENT)
	_, err = os.OpenFile(filepath.Join(dir, "lidar/renamed/frame_002.bin"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	assert.ErrorIs(t, err, syscall.EEXIST)
	assert.ErrorIs(t, syscall.Rmdir(filepath.Join(dir, "lidar/renamed")), syscall.ENOTEMPTY)
	assert.ErrorIs(t, syscall.Unlink(filepath.Join(dir, "lidar/renamed")), syscall.EISDIR)
	require.NoError(t, os.Remove(filepath.Join(dir, "lidar/renamed/frame_002.bin")))
	require.NoError(t, os.Remove(filepath.Join(dir, "lidar/renamed")))
	_, err = c.Stat(ctx, "/lidar/renamed")
	assert.ErrorIs(t, err, syscall.ENOENT)
}

// Two mounts of one Redis: writers of disjoint ranges of one file both
// land (close-to-open), and an exclusive create has one winner.
func TestConcurrentWritersAcrossMounts(t *testing.T) {
	srv := cachetest.StartRedis(t)
	d1, c := mount(t, srv, 0)
	d2, _ := mount(t, srv, 0)
	require.NoError(t, os.WriteFile(filepath.Join(d1, "shared"), nil, 0o644))
	const part = 3<<20 + 12345 // spans chunks, not aligned
	var wg sync.WaitGroup
	for i, d := range []string{d1, d2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.OpenFile(filepath.Join(d, "shared"), os.O_WRONLY, 0)
			if !assert.NoError(t, err) {
				return
			}
			_, err = f.WriteAt(pattern(part, byte(i+1)), int64(i)*part)
			assert.NoError(t, err)
			assert.NoError(t, f.Close())
		}()
	}
	wg.Wait()
	got, err := c.ReadFile(context.Background(), "/shared")
	require.NoError(t, err)
	require.Equal(t, 2*part, len(got))
	assert.True(t, equal(got[:part], pattern(part, 1)) && equal(got[part:], pattern(part, 2)), "both writers' ranges land")
	b, err := os.ReadFile(filepath.Join(d2, "shared"))
	require.NoError(t, err)
	assert.True(t, equal(got, b), "the other mount reads the same after close")

	for round := range 10 {
		name := filepath.Join("excl", string(rune('a'+round)))
		require.NoError(t, os.MkdirAll(filepath.Join(d1, "excl"), 0o755))
		var mu sync.Mutex
		var errs []string
		for _, d := range []string{d1, d2, d1, d2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := os.OpenFile(filepath.Join(d, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					errs = append(errs, "ok")
					f.Close()
				} else if errors.Is(err, syscall.EEXIST) {
					errs = append(errs, "EEXIST")
				} else {
					errs = append(errs, err.Error())
				}
			}()
		}
		wg.Wait()
		sort.Strings(errs)
		assert.Equal(t, []string{"EEXIST", "EEXIST", "EEXIST", "ok"}, errs, name)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func equal(a, b []byte) bool { return string(a) == string(b) }
