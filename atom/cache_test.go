package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/test/testlog"
)

func needFuse(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("fusermount"); err != nil {
		t.Fatal("fusermount is not installed: run make test (it installs it) or apt-get install -y fuse3 libfuse-dev")
	}
}

func isMounted(t *testing.T, dir string) bool {
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

func cacheClient(t *testing.T, srv *cachetest.Server) *cache.Client {
	t.Helper()
	c, err := cache.New(cache.Options{Addr: srv.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// atom run mounts the cache for a job that asks for it, gives it
// REDIS_HOST/REDIS_PORT, and unmounts when the job ends.
func TestRunMountsTheCache(t *testing.T) {
	t.Parallel()
	needFuse(t)
	srv := cachetest.StartRedis(t)
	c := cacheClient(t, srv)
	ctx := context.Background()
	_, err := c.MkdirAll(ctx, "/lidar", 0o755)
	require.NoError(t, err)
	require.NoError(t, c.WriteFile(ctx, "/lidar/frame_001.bin", []byte("points"), 0o644))
	dir := filepath.Join(t.TempDir(), "cache")
	spec := `{"name":"j","cacheMountPath":"` + dir + `","datasets":["lidar","video"]}`
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_CACHE_REDIS=" + srv.Addr, "ATOM_JOB_SPEC=" + spec}, "run", "--",
		"sh", "-c", `cat $ATOM_CACHE_DIR/lidar/frame_001.bin; echo " $REDIS_HOST $REDIS_PORT"; echo written > `+dir+`/lidar/out.txt`))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "points 127.0.0.1 "+srv.Addr[strings.LastIndex(srv.Addr, ":")+1:])
	assert.Contains(t, out, "dataset lidar is not complete")
	assert.Contains(t, out, "dataset video is not complete")
	got, err := c.ReadFile(ctx, "/lidar/out.txt")
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(got))
	assert.False(t, isMounted(t, dir), "unmounted when the job ended: %s", out)

	// SIGTERM to atom: the job gets it, ends, and the cache is unmounted.
	cmd := atomCmd(t, []string{"ATOM_CACHE_REDIS=" + srv.Addr, "ATOM_CACHE_MOUNT=" + dir}, "run", "--",
		"sh", "-c", `trap 'ls `+dir+`/lidar; exit 7' TERM; echo up; while :; do sleep 0.1; done`)
	var buf testlog.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "up") }, 30*time.Second, 20*time.Millisecond)
	assert.True(t, isMounted(t, dir))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	assert.Equal(t, 7, cmd.ProcessState.ExitCode(), buf.String())
	assert.Contains(t, buf.String(), "frame_001.bin", "the job still reads the cache while it stops")
	assert.False(t, isMounted(t, dir))
}

// A job whose cache Redis is down when atom mounts it (Redis restarting)
// waits for it, saying so in its log at each retry, and runs once it is
// back; past $ATOM_CACHE_RETRY it fails naming the Redis and the error.
func TestRunWaitsForCacheRedis(t *testing.T) {
	t.Parallel()
	needFuse(t)
	srv := cachetest.StartRedis(t)
	require.NoError(t, cacheClient(t, srv).WriteFile(context.Background(), "/f.txt", []byte("back"), 0o644))
	srv.Stop()
	dir := filepath.Join(t.TempDir(), "cache")
	cmd := atomCmd(t, []string{"ATOM_CACHE_REDIS=" + srv.Addr, "ATOM_CACHE_MOUNT=" + dir}, "run", "--", "cat", dir+"/f.txt")
	var buf testlog.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "trying again in") }, 30*time.Second, 20*time.Millisecond)
	assert.Contains(t, buf.String(), "atom: cache: redis "+srv.Addr+" not reachable")
	assert.Contains(t, buf.String(), "(retry 1, for up to 2m0s)")
	srv.Restart()
	_ = cmd.Wait()
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), buf.String())
	assert.Contains(t, buf.String(), "back")
	assert.False(t, isMounted(t, dir))

	srv.Stop()
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_CACHE_REDIS=" + srv.Addr, "ATOM_CACHE_MOUNT=" + dir, "ATOM_CACHE_RETRY=1s"}, "run", "--", "true"))
	assert.Equal(t, 5, code, out)
	assert.Regexp(t, `the cache's redis `+srv.Addr+` is unreachable after trying for \d+s \(ATOM_CACHE_RETRY\): redis `+srv.Addr+` not reachable .*connection refused`, out)
}

// A job that asks for the cache on a cluster without one fails clearly.
func TestRunWithoutCacheRedis(t *testing.T) {
	t.Parallel()
	spec := `{"name":"j","cacheMountPath":"/mnt/cache"}`
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_JOB_SPEC=" + spec}, "run", "--", "true"))
	assert.Equal(t, 5, code)
	assert.Contains(t, out, "ATOM_CACHE_REDIS is unset")
}

// atom cache mount unmounts cleanly on SIGTERM.
func TestCacheMountSIGTERM(t *testing.T) {
	t.Parallel()
	needFuse(t)
	srv := cachetest.StartRedis(t)
	dir := filepath.Join(t.TempDir(), "mnt")
	cmd := atomCmd(t, nil, "cache", "mount", "--redis", srv.Addr, dir)
	var buf testlog.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return isMounted(t, dir) }, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), buf.String())
	assert.False(t, isMounted(t, dir))
}

// put, ls, du, get, rm.
func TestCacheCommands(t *testing.T) {
	t.Parallel()
	srv := cachetest.StartRedis(t)
	local := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(local, "sub"), 0o755))
	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB: a progress bar
	require.NoError(t, os.WriteFile(filepath.Join(local, "sub", "big.bin"), big, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(local, "small.txt"), []byte("hi"), 0o644))
	env := []string{"ATOM_CACHE_REDIS=" + srv.Addr}
	run := func(args ...string) string {
		t.Helper()
		code, out := exitCode(t, atomCmd(t, env, append([]string{"cache"}, args...)...))
		require.Equal(t, 0, code, out)
		return out
	}
	out := run("put", local, "video/2024-06")
	assert.Contains(t, out, "2 files, 32.0 MiB")
	assert.Contains(t, out, "dataset video/2024-06 is complete")
	assert.Contains(t, out, "100%", "a progress bar for a large transfer")
	assert.Contains(t, run("ls", "video"), "2024-06/  complete: 2 files, 32.0 MiB")
	// A second writer of the dataset at once is refused and changes nothing.
	lease, err := cacheClient(t, srv).Acquire(context.Background(), "video/2024-06")
	require.NoError(t, err)
	code, out := exitCode(t, atomCmd(t, env, "cache", "put", "-q", local, "video/2024-06"))
	assert.Equal(t, 1, code)
	assert.Regexp(t, `atom cache put: dataset video/2024-06 is being written by another put or warm-up since \S+; try again when it ends`, out)
	lease.Release()
	assert.Contains(t, run("du", "video/2024-06"), "2 files\t2 dirs\t33554434 bytes\tcomplete=true")
	dst := t.TempDir()
	run("get", "-q", "video/2024-06", dst)
	got, err := os.ReadFile(filepath.Join(dst, "sub", "big.bin"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, got))
	code, out = exitCode(t, atomCmd(t, env, "cache", "rm", "video"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "use rm -r")
	run("rm", "-r", "video")
	code, out = exitCode(t, atomCmd(t, env, "cache", "ls", "video"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "no such file or directory")
}
