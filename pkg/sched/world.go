package sched

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// world is the scratch state of one Schedule call: node free resources, the
// bucket index and reservations, mutated as the cycle places replicas. It is
// built from the Snapshot, which it never writes.
type world struct {
	snap   *Snapshot
	nodes  []wnode
	byName map[structs.NodeID]int32
	groups []*group
	gpos   []int32 // positions in the groups' bucket indexes (buckets.pos)
	topo   topology
	// groupsOf[cluster][pool] lists group indices for that pool.
	clusters []structs.ClusterID
	pools    []*structs.Pool // index 0 is the public pool
	poolIdx  map[structs.PoolID]int16
	projPool map[structs.ProjectID][]int16 // a project's pool, then the public pool
	lowPools []int16                       // the public pool, then those lending idle nodes

	tasks   []wtask
	liveOf  map[structs.JobID][]int32 // live replicas (current attempt, not stopping, no executor) per job
	victim  map[structs.JobID]bool    // jobs being preempted whole (snapshot or this cycle)
	stopped map[int32]bool            // replicas of low services preempted this cycle
	// stoppingOf lists, per service running on, its replicas being
	// stopped for a preemptor: placed again once they have stopped.
	stoppingOf map[structs.JobID][]int32
	now        time.Time // the decision's time (Input.Now)
	// wholeServices makes low services victims whole (Input.WholeServices).
	wholeServices bool
	// resourcesFirst ranks victim sets as earlier releases did
	// (Input.ResourcesBeforeWork).
	resourcesFirst bool
	usage          map[structs.Scope]structs.ResourceList
	holds          []Reservation
	selCache       map[string][]int8 // selector -> per node 0 unknown, 1 match, 2 no
	lvlCache       map[levelKey]levelSet
	lowTasks       int     // live low-priority tasks anywhere (0: skip preemption)
	seq            []int   // 0, 1, 2, ...: shared, read-only replica indices
	allCl          []int16 // every cluster index, shared, read-only
	ctx            jobCtx  // scratch placement context (see newCtx)
	ectx           jobCtx  // scratch context of a spark job's executors (see newCtx)
	// execJobs caches, per spark job, the one-replica job standing for
	// one of its executors (executorJob).
	execJobs map[*structs.Job]*structs.Job
	// off marks the jobs evicted in a preemption what-if: the room held
	// for their minimum executors (ReserveMinExecutors) goes with them.
	off   map[structs.JobID]bool
	known *knownTypes
	sels  map[string]selector
	key   []byte // scratch why cache key (whyKey)
}

type wnode struct {
	n        *structs.Node
	cluster  int16
	pool     int16
	group    int32
	ready    bool
	tainted  bool // has NoSchedule/NoExecute taints
	shareCPU int64
	shareMem int64
	freeCPU  int64
	freeMem  int64
	accels   structs.AccelMask // free and healthy
	healthy  int64             // accelerators not quarantined
	devices  map[string]int64  // free edge devices; nil when none
	holds    []int32           // indices into world.holds
	tasks    []int32           // live tasks on the node
	key      int32             // bucket key in every index the node is in
	// doms is the node's topology domain per level of its cluster (-1:
	// none), tidx the indexes of those domains it is in (topology.go);
	// nil in a cluster without topology levels.
	doms []int32
	tidx []*buckets
}

type wtask struct {
	t   *structs.Task
	job *structs.Job // nil if the job is unknown
	ni  int32        // node index, -1 if the node is unknown
	off bool         // removed in a what-if
}

// group is the set of nodes in one (cluster, pool, class, per-accelerator
// binding) with a bucket
// index. class is an accelerator type, "" for CPU nodes or "#dev" for
// edge-device nodes.
type group struct {
	cluster int16
	pool    int16
	class   string
	accel   bool
	idx     *buckets
	nodes   []int32
	low     int // live low-priority tasks on the group's nodes
	// CPU (millicores) and memory (bytes) bound to each accelerator; the
	// nodes of an accelerator group share them.
	shareCPU, shareMem int64
}

const deviceClass = "#dev"

func newWorld(snap *Snapshot) *world {
	w := &world{
		snap:     snap,
		byName:   make(map[structs.NodeID]int32, len(snap.Nodes)),
		poolIdx:  map[structs.PoolID]int16{structs.PublicPool: 0},
		projPool: map[structs.ProjectID][]int16{},
		liveOf:   map[structs.JobID][]int32{},
		victim:   map[structs.JobID]bool{},
		usage:    map[structs.Scope]structs.ResourceList{},
		selCache: map[string][]int8{},
		lvlCache: map[levelKey]levelSet{},
		sels:     map[string]selector{},
	}
	w.pools = append(w.pools, &structs.Pool{Name: structs.PublicPool})
	for _, p := range snap.Pools {
		if p.Name == structs.PublicPool {
			w.pools[0] = p // its minimum runtime
		}
		if p.IsPublic() {
			continue
		}
		w.poolIdx[p.Name] = int16(len(w.pools))
		w.projPool[p.Project] = []int16{int16(len(w.pools)), 0}
		w.pools = append(w.pools, p)
	}
	w.lowPools = []int16{0}
	for i, p := range w.pools {
		if i > 0 && p.LendIdle {
			w.lowPools = append(w.lowPools, int16(i))
		}
	}
	w.buildNodes()
	w.buildTasks()
	for i := range w.nodes {
		w.file(int32(i))
	}
	for i := range w.clusters {
		w.allCl = append(w.allCl, int16(i))
	}
	return w
}

func (w *world) clusterIdx(c structs.ClusterID) int16 {
	for i, x := range w.clusters {
		if x == c {
			return int16(i)
		}
	}
	w.clusters = append(w.clusters, c)
	return int16(len(w.clusters) - 1)
}

func (w *world) buildNodes() {
	w.nodes = make([]wnode, len(w.snap.Nodes))
	w.gpos = make([]int32, len(w.nodes))
	gkey := map[string]int32{}
	for i, n := range w.snap.Nodes {
		wn := &w.nodes[i]
		wn.n = n
		wn.cluster = w.clusterIdx(n.Cluster)
		p, ok := w.poolIdx[n.PoolName()]
		if !ok {
			p = -1 // a pool nobody defined: never eligible
		}
		wn.pool = p
		wn.ready = n.Ready()
		for _, t := range n.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
				wn.tainted = true
			}
		}
		wn.shareCPU, wn.shareMem = n.AccelShare()
		wn.freeCPU, wn.freeMem = n.Capacity.MilliCPU, n.Capacity.Memory
		if a := n.Capacity.Accels; a > 0 {
			wn.accels = structs.AccelMask(1<<uint(min(a, 64)) - 1)
			if a >= 64 {
				wn.accels = ^structs.AccelMask(0)
			}
			wn.accels &^= n.QuarantinedMask() // never given to a new task
			wn.healthy = popcount(wn.accels)
		}
		if len(n.Capacity.Devices) > 0 {
			wn.devices = make(map[string]int64, len(n.Capacity.Devices))
			for k, v := range n.Capacity.Devices {
				wn.devices[k] = v
			}
		}
		if _, dup := w.byName[n.Name]; dup {
			// A second node of the same name is never used: tasks and
			// pins refer to the first.
			wn.ready, wn.pool, p = false, -1, -1
		} else {
			w.byName[n.Name] = int32(i)
		}
		class := ""
		switch {
		case n.Capacity.Accels > 0:
			class = n.Capacity.AccelType
		case len(n.Capacity.Devices) > 0:
			class = deviceClass
		}
		k := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", n.Cluster, n.PoolName(), class, wn.shareCPU, wn.shareMem)
		gi, ok := gkey[k]
		if !ok {
			gi = int32(len(w.groups))
			gkey[k] = gi
			w.groups = append(w.groups, &group{cluster: wn.cluster, pool: p, class: class, accel: n.Capacity.Accels > 0,
				shareCPU: wn.shareCPU, shareMem: wn.shareMem})
		}
		wn.group = gi
		w.groups[gi].nodes = append(w.groups[gi].nodes, int32(i))
	}
	for _, g := range w.groups {
		maxKey := 0
		for _, i := range g.nodes {
			maxKey = max(maxKey, w.keyOf(i, g))
		}
		if !g.accel {
			maxKey = min(maxKey, maxCPUKey)
		}
		g.idx = newBuckets(maxKey, w.gpos)
	}
	// Deterministic group order: cluster, pool, class.
	order := make([]int, len(w.groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ga, gb := w.groups[a], w.groups[b]
		if ga.cluster != gb.cluster {
			return int(ga.cluster) - int(gb.cluster)
		}
		if ga.pool != gb.pool {
			return int(ga.pool) - int(gb.pool)
		}
		if c := strings.Compare(ga.class, gb.class); c != 0 {
			return c
		}
		if ga.shareCPU != gb.shareCPU {
			return cmp.Compare(ga.shareCPU, gb.shareCPU)
		}
		return cmp.Compare(ga.shareMem, gb.shareMem)
	})
	sorted := make([]*group, len(order))
	remap := make([]int32, len(order))
	for newI, oldI := range order {
		sorted[newI] = w.groups[oldI]
		remap[oldI] = int32(newI)
	}
	w.groups = sorted
	for i := range w.nodes {
		w.nodes[i].group = remap[w.nodes[i].group]
	}
	w.buildTopology()
}

// keyOf is node i's bucket key in its group.
func (w *world) keyOf(i int32, g *group) int {
	n := &w.nodes[i]
	if g.accel {
		return n.accels.Count()
	}
	return int(n.freeCPU / 1000)
}

func (w *world) buildTasks() {
	jobs := w.snap.Jobs
	w.tasks = make([]wtask, len(w.snap.Tasks))
	for k, t := range w.snap.Tasks {
		wt := &w.tasks[k]
		wt.t, wt.job, wt.ni = t, jobs[t.Job], -1
		if !t.State.HoldsResources() {
			wt.off = true
			continue
		}
		if t.State == structs.TaskStopping && (t.StopReason != structs.StopPreempted || wt.job == nil || wt.job.Kind != structs.KindService) {
			w.victim[t.Job] = true
		}
		if i, ok := w.byName[t.Node]; ok {
			wt.ni = i
			n := &w.nodes[i]
			n.freeCPU -= t.Resources.MilliCPU
			n.freeMem -= t.Resources.Memory
			n.accels &^= t.Accels
			for d, c := range t.Resources.Devices {
				if n.devices != nil {
					n.devices[d] -= c
				}
			}
			n.tasks = append(n.tasks, int32(k))
			if t.Priority == structs.PriorityLow && t.State != structs.TaskStopping {
				w.groups[n.group].low++
				w.lowTasks++
			}
		}
		if j := wt.job; j != nil && t.Attempt == j.Attempt && t.State != structs.TaskStopping && t.Executor == "" {
			w.liveOf[t.Job] = append(w.liveOf[t.Job], int32(k))
		}
	}
	// A service losing some of its replicas to preemption runs on with
	// the others; one losing them all is being preempted whole.
	for k, t := range w.snap.Tasks {
		switch j := w.tasks[k].job; {
		case t.State != structs.TaskStopping:
		case len(w.liveOf[t.Job]) == 0:
			w.victim[t.Job] = true
		case !w.victim[t.Job] && t.Attempt == j.Attempt && t.Executor == "":
			if w.stoppingOf == nil {
				w.stoppingOf = map[structs.JobID][]int32{}
			}
			w.stoppingOf[t.Job] = append(w.stoppingOf[t.Job], int32(k))
		}
	}
	for s, l := range w.snap.Usage {
		w.usage[s] = l.Clone()
	}
}

// removeTask frees task k's resources (a what-if for preemption).
func (w *world) removeTask(k int32) {
	wt := &w.tasks[k]
	if wt.off || wt.ni < 0 {
		return
	}
	wt.off = true
	n := &w.nodes[wt.ni]
	n.freeCPU += wt.t.Resources.MilliCPU
	n.freeMem += wt.t.Resources.Memory
	n.accels |= wt.t.Accels
	for d, c := range wt.t.Resources.Devices {
		if n.devices != nil {
			n.devices[d] += c
		}
	}
	w.refile(wt.ni)
}

// restoreTask undoes removeTask.
func (w *world) restoreTask(k int32) {
	wt := &w.tasks[k]
	if !wt.off || wt.ni < 0 {
		return
	}
	wt.off = false
	n := &w.nodes[wt.ni]
	n.freeCPU -= wt.t.Resources.MilliCPU
	n.freeMem -= wt.t.Resources.Memory
	n.accels &^= wt.t.Accels
	for d, c := range wt.t.Resources.Devices {
		if n.devices != nil {
			n.devices[d] -= c
		}
	}
	w.refile(wt.ni)
}

// assignment is one replica put on a node in this cycle; undo reverses it.
type assignment struct {
	ni     int32
	res    structs.Resources
	accels structs.AccelMask
}

// take allocates a on its node (a.accels chosen here) and refiles it.
func (w *world) take(ni int32, res structs.Resources) assignment {
	n := &w.nodes[ni]
	a := assignment{ni: ni, res: res}
	if res.Accels > 0 {
		free := uint64(n.accels)
		for c := res.Accels; c > 0; c-- {
			b := free & -free
			a.accels |= structs.AccelMask(b)
			free &^= b
		}
		n.accels &^= a.accels
	}
	n.freeCPU -= res.MilliCPU
	n.freeMem -= res.Memory
	for d, c := range res.Devices {
		n.devices[d] -= c
	}
	w.refile(ni)
	return a
}

func (w *world) undo(a assignment) {
	n := &w.nodes[a.ni]
	n.accels |= a.accels
	n.freeCPU += a.res.MilliCPU
	n.freeMem += a.res.Memory
	for d, c := range a.res.Devices {
		n.devices[d] += c
	}
	w.refile(a.ni)
}

// held sums the resources held on node ni for others than c's job:
// reservations of jobs of its priority or higher (lower-priority ones do
// not bind), and the minimum executors of other spark jobs whatever their
// priority. A reservation for an executor of c's job binds it too, but
// for that executor (c.execPod).
func (w *world) held(c *jobCtx, ni int32) (cpu, mem, acc int64, by structs.JobID) {
	j, p := c.j.ID, c.j.Priority
	for _, h := range w.nodes[ni].holds {
		r := &w.holds[h]
		if r.Job == j && (r.Executor == "" || r.Executor == c.execPod) {
			continue
		}
		if r.Kind == ReserveMinExecutors {
			// A running spark job's: binding whatever the priority,
			// unless the job is evicted (what-if) with it.
			if w.off[r.Job] {
				continue
			}
		} else if rj := w.snap.Jobs[r.Job]; rj != nil && rj.Priority < p {
			continue
		}
		cpu += r.Resources.MilliCPU
		mem += r.Resources.Memory
		acc += r.Resources.Accels
		by = r.Job
	}
	return
}

// hold records reservation r.
func (w *world) hold(r Reservation) {
	ni, ok := w.byName[r.Node]
	if !ok {
		return
	}
	w.holds = append(w.holds, r)
	w.nodes[ni].holds = append(w.nodes[ni].holds, int32(len(w.holds)-1))
	if r.Kind == ReserveMinExecutors {
		if rj := w.snap.Jobs[r.Job]; rj != nil && rj.Priority == structs.PriorityLow {
			// A low spark job's room is freed by evicting it: preemption
			// looks at its node (candidates).
			w.groups[w.nodes[ni].group].low++
			w.lowTasks++
		}
	}
}

func popcount(m structs.AccelMask) int64 { return int64(bits.OnesCount64(uint64(m))) }
