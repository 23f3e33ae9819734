package server

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/structs"
)

// Cache warm-ups (DESIGN §4). A placement on a cluster whose cache lacks
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
}

func (r *warmRun) status() structs.WarmUpStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return structs.WarmUpStatus{WarmUp: r.w, From: maps.Clone(r.from), Bytes: r.bytes, TotalBytes: r.totalBytes,
		Files: r.files, TotalFiles: r.totalFiles, Running: !r.finished}
}

// WarmUps returns the progress of job id's warm-ups that this server runs
// (it is the leader), or nil.
func (s *Server) WarmUps(id structs.JobID) []structs.WarmUpStatus {
	s.mu.Lock()
	var runs []*warmRun
	for k, r := range s.warming {
		if k.job == id {
			runs = append(runs, r)
		}
	}
	s.mu.Unlock()
	var out []structs.WarmUpStatus
	for _, r := range runs {
		out = append(out, r.status())
	}
	slices.SortFunc(out, func(a, b structs.WarmUpStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}

// driveWarmUps starts a run for each warm-up in the state that this term
// does not run yet (or whose run ended without committing its end), and
// cancels the runs of warm-ups that are gone (the job ended or moved on).
func (s *Server) driveWarmUps(ctx context.Context, ls *leaderState) {
	want := map[warmKey]structs.WarmUp{}
	redis := map[structs.ClusterID]string{}
	s.fsm.Read(func(st *state.State) {
		for _, j := range st.Jobs {
			if j.State.Ended() {
				continue
			}
			for _, w := range j.WarmUps {
				if w.Attempt == j.Attempt {
					want[warmKey{j.ID, w.Cluster, w.Attempt}] = w
				}
			}
		}
		if len(want) > 0 {
			for id, c := range st.Clusters {
				redis[id] = c.Redis
			}
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.warming {
		r.mu.Lock()
		finished := r.finished
		r.mu.Unlock()
		if _, ok := want[k]; !ok || finished {
			r.cancel()
			delete(s.warming, k)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b warmKey) int { return cmp.Compare(a.job, b.job) }) {
		if s.warming[k] != nil {
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &warmRun{key: k, w: want[k], cancel: cancel, from: map[string]structs.ClusterID{}}
		s.warming[k] = r
		s.log.Info("cache warm-up started", "job", k.job, "cluster", k.cluster, "datasets", r.w.Datasets)
		go s.runWarmUp(rctx, ls.caches, r, redis)
	}
}

// runWarmUp copies r's datasets and commits the warm-up's end.
func (s *Server) runWarmUp(ctx context.Context, c *caches, r *warmRun, redis map[structs.ClusterID]string) {
	start := time.Now()
	err := s.warm(ctx, c, r, redis)
	defer func() {
		r.mu.Lock()
		r.finished = true
		r.mu.Unlock()
		s.wake()
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

// warm copies the datasets r's cluster lacks from clusters that hold them.
func (s *Server) warm(ctx context.Context, c *caches, r *warmRun, redis map[structs.ClusterID]string) error {
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
		found := false
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
			where := "no other cluster has a cache"
			if len(looked) > 0 {
				where = "looked in " + strings.Join(looked, ", ")
			}
			return fmt.Errorf("dataset %s is in no other cluster's cache (%s): load it with atom cache put", d, where)
		}
	}
	for _, it := range items {
		copied, err := s.copies.copy(ctx, r, it.src, dst, it.dataset)
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
