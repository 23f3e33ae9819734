package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

func putDataset(t *testing.T, r *cachetest.Server, name string, files map[string]int) {
	t.Helper()
	ctx := context.Background()
	c, err := cache.New(cache.Options{Addr: r.Addr})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Init(ctx))
	dir := t.TempDir()
	for f, n := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), make([]byte, n), 0o644))
	}
	_, err = c.Put(ctx, dir, name, nil)
	require.NoError(t, err)
}

// A warm-up copies what the cluster lacks from the first cluster (by
// name) that holds it whole, skips what it holds already, and counts
// bytes and files of the totals; the errors say what was wrong.
func TestWarmCopiesAndCounts(t *testing.T) {
	ra, rb, rc := cachetest.StartRedis(t), cachetest.StartRedis(t), cachetest.StartRedis(t)
	putDataset(t, ra, "lidar/x", map[string]int{"f1": 3<<20 + 5, "f2": 7})
	putDataset(t, rc, "lidar/x", map[string]int{"other": 1})
	putDataset(t, rb, "video/y", map[string]int{"v": 10})
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.warm = &warmups{s: s}
	s.cfg = Config{CacheCheckTTL: time.Minute, CacheCheckTimeout: time.Second, Clock: time.Now}
	c := newCaches(s)
	defer c.close()
	redis := map[structs.ClusterID]string{"a": ra.Addr, "b": rb.Addr, "c": rc.Addr, "d": ""}
	ctx := context.Background()

	run := func(w structs.WarmUp) (structs.WarmUpStatus, error) {
		r := &warmRun{w: w, from: map[string]structs.ClusterID{}}
		err := s.warm.warm(ctx, c, r, redis)
		r.finished = true
		return r.status(), err
	}
	st, err := run(structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/x", "video/y"}})
	require.NoError(t, err)
	assert.Equal(t, structs.WarmUpStatus{WarmUp: structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/x", "video/y"}},
		From: map[string]structs.ClusterID{"lidar/x": "a"}, Bytes: 3<<20 + 12, TotalBytes: 3<<20 + 12, Files: 2, TotalFiles: 2}, st)
	bc, err := cache.New(cache.Options{Addr: rb.Addr})
	require.NoError(t, err)
	defer bc.Close()
	info, ok, err := bc.Complete(ctx, "lidar/x")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cache.DatasetInfo{Files: 2, Bytes: 3<<20 + 12, At: info.At}, info)

	// Already there: nothing to copy.
	st, err = run(structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/x"}})
	require.NoError(t, err)
	assert.Zero(t, st.TotalBytes)
	assert.Empty(t, st.From)

	_, err = run(structs.WarmUp{Cluster: "a", Datasets: []string{"nope"}})
	assert.EqualError(t, err, "dataset nope does not exist: no cluster's cache holds it (cluster a's, looked in b, c): create it with atom cache put LOCAL_DIR nope against a cluster's redis (atom cache ls lists the datasets a cache holds)")
	_, err = run(structs.WarmUp{Cluster: "d", Datasets: []string{"lidar/x"}})
	assert.EqualError(t, err, "cluster d has no cache redis to warm: set its redis address")

	// A source that is down is named with its error; the next one is used.
	ra.Stop()
	rc2 := cachetest.StartRedis(t)
	redis["e"] = rc2.Addr
	start := time.Now()
	st, err = run(structs.WarmUp{Cluster: "e", Datasets: []string{"lidar/x", "only/a"}})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "a source that is down costs CacheCheckTimeout per look")
	assert.Equal(t, map[string]structs.ClusterID{"lidar/x": "b"}, st.From, "a is down, b holds lidar/x now")
	_, err = run(structs.WarmUp{Cluster: "e", Datasets: []string{"only/a"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dataset only/a is in no cluster's cache that answered (looked in a (")
	assert.ErrorIs(t, err, cache.ErrUnavailable, "tried again: a may hold it once it answers")
	assert.Contains(t, err.Error(), cache.ErrUnavailable.Error())
}

// A warm-up whose Redis is down (restarting) tries again with backoff,
// counting and showing its retries, and succeeds once Redis is back; past
// Config.WarmUpRetryFor it fails naming the Redis, the last error and how
// long it tried. A dataset that does not exist fails at once.
func TestWarmUpRetriesWhileRedisIsDown(t *testing.T) {
	ra, rb := cachetest.StartRedis(t), cachetest.StartRedis(t)
	putDataset(t, ra, "lidar/x", map[string]int{"f": 5})
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.warm = &warmups{s: s}
	s.cfg = Config{CacheCheckTTL: time.Minute, CacheCheckTimeout: time.Second, Clock: time.Now, WarmUpRetryFor: time.Minute}
	c := newCaches(s)
	defer c.close()
	redis := map[structs.ClusterID]string{"a": ra.Addr, "b": rb.Addr}
	ctx := context.Background()

	rb.Stop()
	r := &warmRun{w: structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/x"}}, from: map[string]structs.ClusterID{}}
	done := make(chan error, 1)
	go func() { done <- s.warm.warmRetrying(ctx, c, r, redis) }()
	require.Eventually(t, func() bool { return r.status().Retries >= 1 }, 30*time.Second, 20*time.Millisecond)
	assert.Contains(t, r.status().LastError, "cluster b's cache: redis "+rb.Addr+" not reachable")
	rb.Restart()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the warm-up did not end once redis was back")
	}
	assert.Equal(t, map[string]structs.ClusterID{"lidar/x": "a"}, r.status().From)
	assert.Equal(t, int64(5), r.status().Bytes, "counted once")

	err := s.warm.warm(ctx, c, &warmRun{w: structs.WarmUp{Cluster: "b", Datasets: []string{"no/such"}}, from: map[string]structs.ClusterID{}}, redis)
	assert.ErrorContains(t, err, "dataset no/such does not exist")
	assert.NotErrorIs(t, err, cache.ErrUnavailable, "not tried again")

	s.cfg.WarmUpRetryFor = time.Second
	rb.Stop()
	err = s.warm.warmRetrying(ctx, c, &warmRun{w: structs.WarmUp{Cluster: "b", Datasets: []string{"lidar/y"}}, from: map[string]structs.ClusterID{}}, redis)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster b's cache: redis "+rb.Addr+" not reachable")
	assert.Contains(t, err.Error(), "connection refused")
	assert.Regexp(t, `\(tried for \d+s\)$`, err.Error())
}

// A term that ends with tasks waiting for a warm-up forgets it placed
// them: the next leader runs the warm-up and starts them, so this process,
// leading again later, must count them as inherited, not start them too.
func TestTermEndForgetsWarmingTasks(t *testing.T) {
	s := &Server{fsm: fsm.New(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.warm, s.backend = &warmups{s: s}, newDriver(s)
	index := uint64(0)
	apply := func(c state.Command) {
		b, err := state.Encode(c)
		require.NoError(t, err)
		index++
		r, ok := s.fsm.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: b}).(fsm.Response)
		require.True(t, ok)
		require.NoError(t, r.Err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	apply(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "b", Backend: "local", Redis: "127.0.0.1:6380"}})
	apply(&state.NodeUpsert{Node: &structs.Node{Name: "b1", Cluster: "b", State: structs.NodeReady,
		Capacity: structs.Resources{MilliCPU: 4000, Memory: 8 << 30}}})
	for _, id := range []structs.JobID{"warm", "plain"} {
		j := &structs.Job{ID: id, Name: string(id), Kind: structs.KindCommand, Owner: "u1", Priority: structs.PriorityLow,
			Replicas: 1, Resources: structs.Resources{MilliCPU: 1000, Memory: 1 << 30}}
		apply(&state.JobSubmit{Job: j, Now: now})
		pl := sched.Placement{Job: id, Tasks: []sched.TaskPlacement{{ID: structs.TaskID(id + "-0"), Node: "b1",
			Pool: structs.PublicPool, Resources: j.Resources}}}
		if id == "warm" {
			pl.Warm = []string{"lidar/x"}
		}
		apply(&state.PlanCommit{Plan: &sched.Plan{Placements: []sched.Placement{pl}}, Now: now,
			Tokens: map[structs.TaskID]string{structs.TaskID(id + "-0"): "tok-" + string(id)}})
	}
	s.backend.notePlaced(map[structs.TaskID]string{"warm-0": "tok-warm", "plain-0": "tok-plain"})
	s.warm.forgetWarming()
	assert.False(t, s.backend.placedHere(allocKey{id: "warm-0", token: "tok-warm"}))
	assert.True(t, s.backend.placedHere(allocKey{id: "plain-0", token: "tok-plain"}))
}
