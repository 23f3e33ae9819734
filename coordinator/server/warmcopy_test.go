package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// nested writes n files of size bytes under sub/ and sub/deeper/.
func nested(t *testing.T, n, size int) string {
	t.Helper()
	d := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(d, "sub", "deeper"), 0o755))
	for i := range n {
		p := filepath.Join(d, "sub", fmt.Sprintf("m%d", i))
		if i%2 == 1 {
			p = filepath.Join(d, "sub", "deeper", fmt.Sprintf("m%d", i))
		}
		require.NoError(t, os.WriteFile(p, make([]byte, size), 0o644))
	}
	return d
}

func warmTestServer(t *testing.T) (*Server, *caches) {
	t.Helper()
	retry := warmBusyRetry
	warmBusyRetry = 10 * time.Millisecond
	t.Cleanup(func() { warmBusyRetry = retry })
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.warm = &warmups{s: s}
	s.cfg = Config{CacheCheckTTL: time.Minute, CacheCheckTimeout: time.Second, Clock: time.Now}
	c := newCaches(s)
	t.Cleanup(c.close)
	return s, c
}

func (fl *copyFlights) runsOf(addr, dataset string) int {
	fl.mu.Lock()
	f := fl.m[heldKey{addr, dataset}]
	fl.mu.Unlock()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

// twoCaches starts the cache Redis of clusters a and b, puts dataset
// (n files of size bytes, nested) into a's and readies b's.
func twoCaches(t *testing.T, n, size int, dataset string) (src, dst *cache.Client, redis map[structs.ClusterID]string) {
	t.Helper()
	ctx := context.Background()
	ra, rb := cachetest.StartRedis(t), cachetest.StartRedis(t)
	src, err := cache.New(cache.Options{Addr: ra.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	require.NoError(t, src.Init(ctx))
	_, err = src.Put(ctx, nested(t, n, size), dataset, nil)
	require.NoError(t, err)
	dst, err = cache.New(cache.Options{Addr: rb.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { dst.Close() })
	require.NoError(t, dst.Init(ctx))
	return src, dst, map[structs.ClusterID]string{"a": ra.Addr, "b": rb.Addr}
}

// Two jobs that need the same uncached dataset on the same cluster: one
// copy runs, the other job's warm-up waits for it, both see its progress
// and both succeed; the dataset is copied once, whole.
func TestWarmUpsShareOneCopy(t *testing.T) {
	ctx := context.Background()
	s, c := warmTestServer(t)
	src, dst, redis := twoCaches(t, 40, 1000, "only/a2")
	rc := cachetest.StartRedis(t)

	// Hold the target's lease so that both warm-ups are surely running
	// at once: the first waits it out, the second waits for the first.
	hold, err := dst.Acquire(ctx, "only/a2")
	require.NoError(t, err)
	type result struct {
		st  structs.WarmUpStatus
		err error
	}
	out := make(chan result, 2)
	runs := make([]*warmRun, 2)
	for i, job := range []structs.JobID{"j1", "j2"} {
		runs[i] = &warmRun{key: warmKey{job: job, cluster: "b"}, w: structs.WarmUp{Cluster: "b", Datasets: []string{"only/a2"}},
			from: map[string]structs.ClusterID{}}
		go func(r *warmRun) {
			err := s.warm.warm(ctx, c, r, redis)
			r.mu.Lock()
			r.finished = true
			r.mu.Unlock()
			out <- result{r.status(), err}
		}(runs[i])
	}
	require.Eventually(t, func() bool { return s.warm.copies.runsOf(redis["b"], "only/a2") == 2 }, 10*time.Second, 5*time.Millisecond)
	hold.Release()
	want := structs.WarmUpStatus{WarmUp: structs.WarmUp{Cluster: "b", Datasets: []string{"only/a2"}},
		From: map[string]structs.ClusterID{"only/a2": "a"}, Bytes: 40000, TotalBytes: 40000, Files: 40, TotalFiles: 40}
	for range 2 {
		r := <-out
		require.NoError(t, r.err)
		assert.Equal(t, want, r.st)
	}
	info, ok, err := dst.Complete(ctx, "only/a2")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 40, Bytes: 40000, At: info.At}, info)
	assert.Zero(t, s.warm.copies.runsOf(redis["b"], "only/a2"), "the flight is gone when it ends")

	// Copied once: as many inodes handed out as one copy into an empty
	// Redis takes.
	once, err := cache.New(cache.Options{Addr: rc.Addr})
	require.NoError(t, err)
	defer once.Close()
	require.NoError(t, once.Init(ctx))
	_, err = cache.Copy(ctx, src, once, "only/a2", nil)
	require.NoError(t, err)
	n1, err := once.Redis().Get(ctx, "atom:next").Int64()
	require.NoError(t, err)
	n2, err := dst.Redis().Get(ctx, "atom:next").Int64()
	require.NoError(t, err)
	assert.Equal(t, n1, n2)

	// A third job later: complete there, nothing to copy.
	r := &warmRun{w: structs.WarmUp{Cluster: "b", Datasets: []string{"only/a2"}}, from: map[string]structs.ClusterID{}}
	require.NoError(t, s.warm.warm(ctx, c, r, redis))
	assert.Zero(t, r.status().TotalBytes)
}

// A warm-up whose dataset is being loaded into the target (atom cache
// put) waits for the load and, finding the dataset complete, copies
// nothing.
func TestWarmUpWaitsForPutAndSkips(t *testing.T) {
	ctx := context.Background()
	s, c := warmTestServer(t)
	_, dst, redis := twoCaches(t, 4, 10, "ds/p")

	started, resume, putErr := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	first := true
	go func() {
		_, err := dst.Put(ctx, nested(t, 6, 7), "ds/p", func(int64) {
			if first {
				first = false
				close(started)
				<-resume
			}
		})
		putErr <- err
	}()
	<-started
	r := &warmRun{w: structs.WarmUp{Cluster: "b", Datasets: []string{"ds/p"}}, from: map[string]structs.ClusterID{}}
	errc := make(chan error, 1)
	go func() { errc <- s.warm.warm(ctx, c, r, map[structs.ClusterID]string{"a": redis["a"], "b": redis["b"]}) }()
	require.Eventually(t, func() bool { return s.warm.copies.runsOf(redis["b"], "ds/p") == 1 }, 10*time.Second, 5*time.Millisecond)
	close(resume)
	require.NoError(t, <-putErr)
	require.NoError(t, <-errc)
	st := r.status()
	assert.Empty(t, st.From)
	assert.Equal(t, [4]int64{0, 0, 0, 0}, [4]int64{st.Bytes, st.TotalBytes, st.Files, st.TotalFiles})
	info, ok, err := dst.Complete(ctx, "ds/p")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 6, Bytes: 42, At: info.At}, info, "the put's data, not copied over")
}

// The job whose warm-up runs the shared copy ends (cancelled) while
// another job waits on it: the waiting warm-up runs the copy itself.
func TestSharedCopyOutlivesItsStarter(t *testing.T) {
	ctx := context.Background()
	s, c := warmTestServer(t)
	_, dst, redis := twoCaches(t, 10, 100, "ds/s")
	hold, err := dst.Acquire(ctx, "ds/s")
	require.NoError(t, err)

	w := structs.WarmUp{Cluster: "b", Datasets: []string{"ds/s"}}
	r1 := &warmRun{w: w, from: map[string]structs.ClusterID{}}
	ctx1, cancel1 := context.WithCancel(ctx)
	err1 := make(chan error, 1)
	go func() { err1 <- s.warm.warm(ctx1, c, r1, redis) }()
	require.Eventually(t, func() bool { return s.warm.copies.runsOf(redis["b"], "ds/s") == 1 }, 10*time.Second, 5*time.Millisecond)
	r2 := &warmRun{w: w, from: map[string]structs.ClusterID{}}
	err2 := make(chan error, 1)
	go func() { err2 <- s.warm.warm(ctx, c, r2, redis) }()
	require.Eventually(t, func() bool { return s.warm.copies.runsOf(redis["b"], "ds/s") == 2 }, 10*time.Second, 5*time.Millisecond)
	cancel1()
	require.Error(t, <-err1)
	// r2 now runs a flight of its own (still waiting for the lease).
	require.Eventually(t, func() bool { return s.warm.copies.runsOf(redis["b"], "ds/s") == 1 }, 10*time.Second, 5*time.Millisecond)
	hold.Release()
	require.NoError(t, <-err2)
	st := r2.status()
	assert.Equal(t, [4]int64{1000, 1000, 10, 10}, [4]int64{st.Bytes, st.TotalBytes, st.Files, st.TotalFiles})
	_, ok, err := dst.Complete(ctx, "ds/s")
	require.NoError(t, err)
	assert.True(t, ok)
}
