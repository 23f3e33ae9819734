package server

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/structs"
)

// Defaults of the cache settings in Config.
const (
	// DefaultCacheCheckTTL is how long the leader trusts what a cluster's
	// cache held (or did not hold, or could not say).
	DefaultCacheCheckTTL = 30 * time.Second
	// DefaultCacheCheckTimeout bounds one cycle's wait for cache checks:
	// a Redis that does not answer in time counts as not holding the data
	// (and is not asked again for a CacheCheckTTL).
	DefaultCacheCheckTimeout = time.Second
	// DefaultWarmUpRetryFor is how long a warm-up that cannot reach a
	// Redis (one restarting, say) tries again before it fails.
	DefaultWarmUpRetryFor = 2 * time.Minute
)

// caches is one term's view of the clusters' dataset caches: Redis
// clients by address, and which datasets each held when last checked.
// The scheduling loop and the warm-ups use it concurrently.
type caches struct {
	s *Server

	mu      sync.Mutex
	clients map[string]*cache.Client // by Redis address and purpose
	seen    map[heldKey]held
}

type heldKey struct{ addr, dataset string }

type held struct {
	ok bool
	at time.Time
}

func newCaches(s *Server) *caches {
	return &caches{s: s, clients: map[string]*cache.Client{}, seen: map[heldKey]held{}}
}

// client returns the client for addr: quick ones (checks, bounded by
// CacheCheckTimeout) or ones for copying (the cache's own bound per
// operation).
func (c *caches) client(addr string, copying bool) (*cache.Client, error) {
	key := addr
	o := cache.Options{Addr: addr, Timeout: c.s.cfg.CacheCheckTimeout}
	if copying {
		key, o.Timeout = "copy "+addr, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[key]; cl != nil {
		return cl, nil
	}
	cl, err := cache.New(o)
	if err != nil {
		return nil, err
	}
	c.clients[key] = cl
	return cl, nil
}

// close closes every client (the term has ended).
func (c *caches) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		_ = cl.Close()
	}
	c.clients = map[string]*cache.Client{}
}

// note records what addr's cache holds of dataset now.
func (c *caches) note(addr, dataset string, ok bool) {
	c.mu.Lock()
	c.seen[heldKey{addr, dataset}] = held{ok: ok, at: c.s.now()}
	c.mu.Unlock()
}

// presence says, for each cluster with a cache (redis: every cluster's
// cache address, "" for none), which of the pending jobs' datasets it
// holds completely: Snapshot.Cache. Answers younger than
// CacheCheckTTL are reused; the rest are asked for, every Redis at once,
// for at most CacheCheckTimeout. An error or no answer in time counts as
// not held. nil when no pending job names a dataset or no cluster has a
// cache.
func (c *caches) presence(ctx context.Context, redis map[structs.ClusterID]string, pending []*structs.Job) map[structs.ClusterID]map[string]bool {
	var datasets []string
	wants := false // a pending job mounts the cache
	for _, j := range pending {
		wants = wants || j.CacheMountPath != ""
		for _, d := range j.Datasets {
			if !slices.Contains(datasets, d) {
				datasets = append(datasets, d)
			}
		}
	}
	if !wants && len(datasets) == 0 {
		return nil
	}
	addrs := map[structs.ClusterID]string{}
	for id, addr := range redis {
		if addr != "" {
			addrs[id] = addr
		}
	}
	if len(addrs) == 0 {
		// No cluster has a cache: a job that mounts one fits nowhere
		// (sched.Snapshot.Cache), rather than fail where it lands.
		return map[structs.ClusterID]map[string]bool{}
	}
	now := c.s.now()
	ask := map[string][]string{} // addr -> datasets to check
	c.mu.Lock()
	for _, addr := range addrs {
		for _, d := range datasets {
			if h, ok := c.seen[heldKey{addr, d}]; (!ok || now.Sub(h.at) >= c.s.cfg.CacheCheckTTL) && !slices.Contains(ask[addr], d) {
				ask[addr] = append(ask[addr], d)
			}
		}
	}
	c.mu.Unlock()
	if len(ask) > 0 {
		ctx, cancel := context.WithTimeout(ctx, c.s.cfg.CacheCheckTimeout)
		var wg sync.WaitGroup
		for addr, ds := range ask {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.check(ctx, addr, ds)
			}()
		}
		wg.Wait()
		cancel()
	}
	out := make(map[structs.ClusterID]map[string]bool, len(addrs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(addrs)) {
		m := map[string]bool{}
		for _, d := range datasets {
			if c.seen[heldKey{addrs[id], d}].ok {
				m[d] = true
			}
		}
		out[id] = m
	}
	return out
}

// check asks addr's Redis whether it holds each of datasets. The first
// error ends the checks: the rest count as not held.
func (c *caches) check(ctx context.Context, addr string, datasets []string) {
	cl, err := c.client(addr, false)
	for _, d := range datasets {
		ok := false
		if err == nil {
			_, ok, err = cl.Complete(ctx, d)
			if err != nil {
				c.s.log.Warn("cache check failed: counting the dataset as not cached", "redis", addr, "dataset", d, "err", err)
			}
		}
		c.note(addr, d, ok && err == nil)
	}
}
