package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// Cache warm-ups. A placement on a cluster whose cache lacks
// some of the job's datasets commits a structs.WarmUp; its tasks stay
// Scheduled, unstarted (state.Warming). Each cycle the leader starts a run
// for every warm-up in the state that it does not run yet:
//
//	run: for each dataset: already in the cluster's Redis? skip
//	     else find a cluster whose Redis holds it whole (by name order)
//	     copy it (pkg/cache CopyFiles), counting bytes and files; a copy
//	     of it into this Redis already running (another job's warm-up)
//	     is waited for and shared, not run twice (warmcopy.go)
//	──▶ WarmUpEnd (ok, or the error) ──▶ the tasks start, or the job
//	    restarts or fails by its policy
//
// Only WarmUpEnd goes through Raft; progress stays in the leader's memory
// (WarmUps). A new leader finds the warm-ups of the old one in the state
// and runs them again: what was copied whole is skipped, a dataset half
// copied is copied again. Their tasks were never started (a task starts
// only after its WarmUpEnd has applied), so the new leader starts them
// itself (they are not inherited).

// warmKey names one warm-up.
type warmKey struct {
	job     structs.JobID
	cluster structs.ClusterID
	attempt int
}

// warmRun is one warm-up this term runs.
type warmRun struct {
	key    warmKey
	w      structs.WarmUp
	cancel context.CancelFunc

	mu                                   sync.Mutex
	from                                 map[string]structs.ClusterID
	bytes, totalBytes, files, totalFiles int64
	finished                             bool // ended, committed or not
	retries                              int
	lastErr                              string
}

func (r *warmRun) status() structs.WarmUpStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return structs.WarmUpStatus{WarmUp: r.w, From: maps.Clone(r.from), Bytes: r.bytes, TotalBytes: r.totalBytes,
		Files: r.files, TotalFiles: r.totalFiles, Running: !r.finished, Retries: r.retries, LastError: r.lastErr}
}

// warmups is the leader component that runs the cache warm-ups: each
// cycle the scheduler has it start the runs the state asks for (drive).
type warmups struct {
	s      *Server
	copies copyFlights // the dataset copies running now

	mu      sync.Mutex           // guards the fields below
	warming map[warmKey]*warmRun // the runs of this term; nil between terms
	caches  *caches              // this term's view of the caches; nil between terms
}

func (w *warmups) establish(context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warming = map[warmKey]*warmRun{}
	w.caches = newCaches(w.s)
}

func (w *warmups) run(context.Context) {} // the scheduling cycle drives it

// revoke cancels the term's runs, closes its cache clients and forgets
// the tasks still waiting for a warm-up (forgetWarming).
func (w *warmups) revoke() {
	w.mu.Lock()
	for _, r := range w.warming {
		r.cancel()
	}
	c := w.caches
	w.warming, w.caches = nil, nil
	w.mu.Unlock()
	if c != nil {
		c.close()
	}
	w.forgetWarming()
}

// presence is the term's caches' answer (caches.presence); nil between
// terms.
func (w *warmups) presence(ctx context.Context, redis map[structs.ClusterID]string, pending []*structs.Job) map[structs.ClusterID]map[string]bool {
	w.mu.Lock()
	c := w.caches
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.presence(ctx, redis, pending)
}

// WarmUps returns the progress of job id's warm-ups that this server runs
// (it is the leader), or nil.
func (s *Server) WarmUps(id structs.JobID) []structs.WarmUpStatus {
	w := s.warm
	w.mu.Lock()
	var runs []*warmRun
	for k, r := range w.warming {
		if k.job == id {
			runs = append(runs, r)
		}
	}
	w.mu.Unlock()
	var out []structs.WarmUpStatus
	for _, r := range runs {
		out = append(out, r.status())
	}
	slices.SortFunc(out, func(a, b structs.WarmUpStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}

// drive starts a run for each of the state's warm-ups (the current
// attempts' of the jobs that have not ended) that this term does not run
// yet (or whose run ended without committing its end), and cancels the
// runs of warm-ups that are gone (the job ended or moved on). redis is
// every cluster's cache address.
func (w *warmups) drive(ctx context.Context, wus []state.JobWarmUp, redis map[structs.ClusterID]string) {
	want := make(map[warmKey]structs.WarmUp, len(wus))
	for _, wu := range wus {
		want[warmKey{wu.Job, wu.Cluster, wu.Attempt}] = wu.WarmUp
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.warming == nil {
		return // the term has ended
	}
	for k, r := range w.warming {
		r.mu.Lock()
		finished := r.finished
		r.mu.Unlock()
		if _, ok := want[k]; !ok || finished {
			r.cancel()
			delete(w.warming, k)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b warmKey) int { return cmp.Compare(a.job, b.job) }) {
		if w.warming[k] != nil {
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &warmRun{key: k, w: want[k], cancel: cancel, from: map[string]structs.ClusterID{}}
		w.warming[k] = r
		w.s.log.Info("cache warm-up started", "job", k.job, "cluster", k.cluster, "datasets", r.w.Datasets)
		go w.runWarmUp(rctx, w.caches, r, redis)
	}
}

// forgetWarming runs when a term ends: the tasks still waiting for a
// warm-up are the next leader's, which runs the warm-up again and starts
// them. This process forgets it placed them, so that, leading again once
// another has ended the warm-up (and may have started them), it counts
// them as inherited and does not start them a second time.
func (w *warmups) forgetWarming() {
	var keys []allocKey
	w.s.fsm.Read(func(st *state.State) {
		for id, t := range st.Tasks {
			if st.Warming(t) {
				keys = append(keys, allocKey{id: id, token: st.Tokens[id]})
			}
		}
	})
	w.s.backend.forget(keys)
}

// runWarmUp copies r's datasets and commits the warm-up's end.
func (w *warmups) runWarmUp(ctx context.Context, c *caches, r *warmRun, redis map[structs.ClusterID]string) {
	s := w.s
	start := time.Now()
	err := w.warmRetrying(ctx, c, r, redis)
	defer func() {
		r.mu.Lock()
		r.finished = true
		r.mu.Unlock()
		s.sched.wake()
	}()
	if ctx.Err() != nil {
		return // the job ended, or this term did: the next leader runs it again
	}
	end := &state.WarmUpEnd{Job: r.key.job, Cluster: r.w.Cluster, Attempt: r.w.Attempt, Now: s.now()}
	st := r.status()
	if err != nil {
		end.Error = err.Error()
		s.log.Warn("cache warm-up failed", "job", end.Job, "cluster", end.Cluster, "err", err)
	} else {
		s.log.Info("cache warm-up done", "job", end.Job, "cluster", end.Cluster, "bytes", st.Bytes, "files", st.Files, "took", time.Since(start))
	}
	if _, err := s.Apply(ctx, end); err != nil && ctx.Err() == nil {
		s.log.Warn("commit cache warm-up end failed: it runs again", "job", end.Job, "err", err)
	}
}

// warmRetrying is warm, tried again with backoff while it fails because a
// Redis is unreachable (one restarting, say), for up to
// Config.WarmUpRetryFor; each retry is logged and shows in the warm-up's
// status. The error it gives up with says how long it tried.
func (w *warmups) warmRetrying(ctx context.Context, c *caches, r *warmRun, redis map[structs.ClusterID]string) error {
	s := w.s
	start := time.Now()
	for n := 1; ; n++ {
		err := w.warm(ctx, c, r, redis)
		if err == nil || !errors.Is(err, cache.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		wait := client.DefaultBackoff(n)
		if time.Since(start)+wait > s.cfg.WarmUpRetryFor {
			return fmt.Errorf("%w (tried for %s)", err, time.Since(start).Round(time.Second))
		}
		r.mu.Lock()
		r.retries, r.lastErr = n, err.Error()
		r.from, r.bytes, r.totalBytes, r.files, r.totalFiles = map[string]structs.ClusterID{}, 0, 0, 0, 0 // counted again
		r.mu.Unlock()
		s.log.Warn("cache warm-up: a redis is unreachable, trying again", "job", r.key.job, "cluster", r.w.Cluster,
			"retry", n, "in", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// warm copies the datasets r's cluster lacks from clusters that hold them.
func (w *warmups) warm(ctx context.Context, c *caches, r *warmRun, redis map[structs.ClusterID]string) error {
	to := r.w.Cluster
	dstAddr := redis[to]
	if dstAddr == "" {
		return fmt.Errorf("cluster %s has no cache redis to warm: set its redis address", to)
	}
	// wrap names the cluster, and its Redis unless the error does.
	wrap := func(err error) error {
		if strings.Contains(err.Error(), dstAddr) {
			return fmt.Errorf("cluster %s's cache: %w", to, err)
		}
		return fmt.Errorf("cluster %s's cache (redis %s): %w", to, dstAddr, err)
	}
	dst, err := c.client(dstAddr, true)
	if err == nil {
		err = dst.Init(ctx) // checks the layout; an empty Redis gets it
	}
	if err != nil {
		return wrap(err)
	}
	type item struct {
		dataset string
		from    structs.ClusterID
		src     *cache.Client
		info    cache.DatasetInfo
	}
	var items []item
	for _, d := range r.w.Datasets {
		_, ok, err := dst.Complete(ctx, d)
		if err != nil {
			return wrap(err)
		}
		if ok {
			c.note(dstAddr, d, true) // there already (an earlier run, another job)
			continue
		}
		var looked []string
		found, unreachable := false, false
		for _, id := range slices.Sorted(maps.Keys(redis)) {
			if id == to || redis[id] == "" {
				continue
			}
			// Look with the quick client (a source that is down costs
			// CacheCheckTimeout), copy with the patient one.
			chk, err := c.client(redis[id], false)
			var info cache.DatasetInfo
			if err == nil {
				info, ok, err = chk.Complete(ctx, d)
			}
			var src *cache.Client
			if err == nil && ok {
				src, err = c.client(redis[id], true)
			}
			switch {
			case err != nil:
				looked = append(looked, fmt.Sprintf("%s (%v)", id, err))
				unreachable = unreachable || errors.Is(err, cache.ErrUnavailable)
				continue
			case !ok:
				looked = append(looked, string(id))
				continue
			}
			items = append(items, item{d, id, src, info})
			r.mu.Lock()
			r.from[d] = id
			r.totalBytes += info.Bytes
			r.totalFiles += info.Files
			r.mu.Unlock()
			found = true
			break
		}
		if !found {
			return missing(ctx, dst, to, d, looked, unreachable)
		}
	}
	for _, it := range items {
		copied, err := w.copies.copy(ctx, r, it.src, dst, it.dataset)
		if err != nil {
			return fmt.Errorf("copy dataset %s from cluster %s to %s: %w", it.dataset, it.from, to, err)
		}
		if !copied { // another warm-up or a put loaded it meanwhile
			r.mu.Lock()
			delete(r.from, it.dataset)
			r.totalBytes -= it.info.Bytes
			r.totalFiles -= it.info.Files
			r.mu.Unlock()
		}
		c.note(dstAddr, it.dataset, true)
	}
	return nil
}

// missingError is a dataset no cluster's cache holds whole. It counts as
// cache.ErrUnavailable when a cluster could not be asked: the dataset may
// be there once it answers.
type missingError struct {
	msg         string
	unreachable bool
}

func (e *missingError) Error() string { return e.msg }

func (e *missingError) Is(target error) bool { return e.unreachable && target == cache.ErrUnavailable }

// missing is the error for dataset d, which cluster to's cache (dst) and
// the other clusters' (looked: each one's name, and its error) do not
// hold whole. A dataset that is nowhere at all is said not to exist, with
// how to create it; one that is in to's cache in part, that it is
// incomplete there.
func missing(ctx context.Context, dst *cache.Client, to structs.ClusterID, d string, looked []string, unreachable bool) error {
	how := fmt.Sprintf("create it with atom cache put LOCAL_DIR %s against a cluster's redis (atom cache ls lists the datasets a cache holds)", d)
	where := "no other cluster has a cache"
	if len(looked) > 0 {
		where = "looked in " + strings.Join(looked, ", ")
	}
	if _, err := dst.Stat(ctx, d); err == nil {
		return &missingError{fmt.Sprintf("dataset %s is incomplete in cluster %s's cache and whole in no other (%s): load it again with atom cache put LOCAL_DIR %s", d, to, where, d), unreachable}
	}
	if unreachable {
		return &missingError{fmt.Sprintf("dataset %s is in no cluster's cache that answered (%s); if it does not exist, %s", d, where, how), true}
	}
	return &missingError{fmt.Sprintf("dataset %s does not exist: no cluster's cache holds it (cluster %s's, %s): %s", d, to, where, how), false}
}
