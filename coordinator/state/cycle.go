package state

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Cycle is what one scheduling cycle of the leader reads of the state:
// the scheduler's snapshot and pending jobs, the allocations the backend
// starts and stops, the cache warm-ups to run and the clusters' caches.
// ReadCycle gathers it in one walk under the read lock, copying only
// references, and sorts and derives the rest after the lock is released;
// it shares the (copy-on-write) objects, so later commands do not change
// it.
type Cycle struct {
	Snap    *sched.Snapshot
	Pending []*structs.Job
	// Allocs are the Scheduled and the Stopping tasks, by task ID.
	Allocs []Alloc
	// WarmUps are the warm-ups of the current attempts of the jobs that
	// have not ended.
	WarmUps []JobWarmUp
	// Redis is every cluster's cache address ("" for none).
	Redis map[structs.ClusterID]string

	live      map[structs.JobID]int // Pending's count of live replicas
	fairUsage sched.Usage
	weights   map[structs.Scope]float64
	aging     time.Duration
}

// Alloc is one allocation as the backend sees it.
type Alloc struct {
	Task  *structs.Task
	Job   *structs.Job // nil when the job is gone
	Token string
	// Warming: the task is Scheduled and held back for a cache warm-up
	// (State.Warming).
	Warming bool
	// For a Scheduled task of a gang job: its gang (the job's tasks of its
	// attempt, Spark executors not counted) and whether none of them is
	// stopping or has ended (Scheduled or Running). nil otherwise.
	Gang      []structs.TaskID
	GangWhole bool
	// Cluster is the cluster of the task's node (nil when either is gone).
	Cluster *structs.Cluster
}

// Allocs returns tasks as allocations.
func (s *State) Allocs(tasks []*structs.Task) []Alloc {
	gangs := map[gangKey]gangOf{}
	out := make([]Alloc, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, s.alloc(t, gangs))
	}
	return out
}

type gangKey struct {
	job     structs.JobID
	attempt int
}

type gangOf struct {
	ids   []structs.TaskID
	whole bool
}

// alloc returns task t as an allocation; gangs memoises the gangs.
func (s *State) alloc(t *structs.Task, gangs map[gangKey]gangOf) Alloc {
	j := s.Jobs[t.Job]
	a := Alloc{Task: t, Job: j, Token: s.Tokens[t.ID], Warming: s.Warming(t)}
	if n := s.Nodes[t.Node]; n != nil {
		a.Cluster = s.Clusters[n.Cluster]
	}
	if t.State != structs.TaskScheduled || j == nil || !j.IsGang() {
		return a
	}
	k := gangKey{t.Job, t.Attempt}
	g, ok := gangs[k]
	if !ok {
		g.whole = true
		for _, x := range s.TasksOf(t.Job) {
			if x.Attempt != t.Attempt || x.Executor != "" { // a spark job's executors are no gang members
				continue
			}
			g.ids = append(g.ids, x.ID)
			if x.State != structs.TaskScheduled && x.State != structs.TaskRunning {
				g.whole = false
			}
		}
		gangs[k] = g
	}
	a.Gang, a.GangWhole = g.ids, g.whole
	return a
}

// JobWarmUp is a job's warm-up on one cluster.
type JobWarmUp struct {
	Job structs.JobID
	structs.WarmUp
}

// ReadCycle reads the state once through read (the FSM's Read, or a call
// of fn on a state) and returns the cycle's view of it.
func ReadCycle(read func(fn func(*State))) *Cycle {
	var c *Cycle
	read(func(s *State) { c = s.gather() })
	c.finish()
	return c
}

// gather is ReadCycle's part under the lock: one walk over the jobs and
// one over the tasks, collecting references.
func (s *State) gather() *Cycle {
	snap := &sched.Snapshot{
		Index:        s.Index,
		Quotas:       make(map[structs.Scope]structs.ResourceList, len(s.Quotas)),
		Usage:        make(map[structs.Scope]structs.ResourceList, len(s.Usage)),
		Jobs:         make(map[structs.JobID]*structs.Job, len(s.Jobs)),
		Reservations: slices.Clone(s.Reservations),
		Topology:     s.topology(),
		Clusters:     s.declared(),
	}
	c := &Cycle{Snap: snap, Redis: make(map[structs.ClusterID]string, len(s.Clusters)), live: map[structs.JobID]int{},
		fairUsage: s.FairUsage.Clone(), weights: maps.Clone(s.Weights), aging: s.FairShare.AgingOrDefault()}
	for id, cl := range s.Clusters {
		c.Redis[id] = cl.Redis
	}
	for _, n := range s.Nodes {
		snap.Nodes = append(snap.Nodes, n)
		if cl := s.Clusters[n.Cluster]; (cl == nil || cl.Backend != "kubernetes") && !snap.NoExecutors[n.Cluster] {
			// Spark runs in local mode there: no executor Pods.
			if snap.NoExecutors == nil {
				snap.NoExecutors = map[structs.ClusterID]bool{}
			}
			snap.NoExecutors[n.Cluster] = true
		}
	}
	for _, p := range s.Pools {
		snap.Pools = append(snap.Pools, p)
	}
	for k, v := range s.Quotas {
		snap.Quotas[k] = v.Clone()
	}
	for k, v := range s.Usage {
		snap.Usage[k] = v.Clone()
	}
	for id, j := range s.Jobs {
		if j.State.Ended() {
			continue
		}
		snap.Jobs[id] = j
		for _, w := range j.WarmUps {
			if w.Attempt == j.Attempt {
				c.WarmUps = append(c.WarmUps, JobWarmUp{Job: id, WarmUp: w})
			}
		}
	}
	gangs := map[gangKey]gangOf{}
	for _, t := range s.Tasks {
		j := s.Jobs[t.Job]
		current := j != nil && t.Attempt == j.Attempt && t.Executor == "" // executors are no replicas
		switch {
		case t.State.HoldsResources():
			snap.Tasks = append(snap.Tasks, t)
			if current && t.State != structs.TaskStopping {
				c.live[t.Job]++
			}
		case current && !j.State.Ended():
			if snap.Ended == nil {
				snap.Ended = map[structs.JobID]int{}
			}
			snap.Ended[t.Job]++
		}
		if t.State == structs.TaskScheduled || t.State == structs.TaskStopping {
			c.Allocs = append(c.Allocs, s.alloc(t, gangs))
		}
	}
	return c
}

// finish sorts what gather collected and derives the rest, outside the
// lock.
func (c *Cycle) finish() {
	snap := c.Snap
	slices.SortFunc(snap.Nodes, func(a, b *structs.Node) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(snap.Pools, func(a, b *structs.Pool) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(snap.Tasks, func(a, b *structs.Task) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(c.Allocs, func(a, b Alloc) int { return cmp.Compare(a.Task.ID, b.Task.ID) })
	slices.SortFunc(c.WarmUps, func(a, b JobWarmUp) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Cluster, b.Cluster))
	})
	weights := c.weights
	snap.FairShare = sched.Positions(&c.fairUsage, func(sc structs.Scope) float64 { return structs.WeightOrDefault(weights[sc]) },
		snap.Jobs, c.aging)
	for _, id := range slices.Sorted(maps.Keys(snap.Jobs)) {
		if j := snap.Jobs[id]; wantsReplicas(j, c.live[id]) {
			c.Pending = append(c.Pending, j)
		}
	}
	c.live, c.weights, c.fairUsage = nil, nil, sched.Usage{}
}

// wantsReplicas reports whether job j, with live replicas of its current
// attempt holding resources and not stopping, wants replicas placed: it
// is pending, or a service short of its replicas.
func wantsReplicas(j *structs.Job, live int) bool {
	return j.State == structs.JobPending ||
		(j.Kind == structs.KindService && !j.State.Ended() && live < j.ShapeAt(j.Shape).Replicas)
}
