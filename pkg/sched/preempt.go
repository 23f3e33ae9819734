package sched

import (
	"cmp"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// victim is a low-priority job whose eviction is being considered.
type victim struct {
	job     *structs.Job
	tasks   []int32 // every live task of the job (a gang is evicted whole)
	held    []int32 // nodes of the room held for its minimum executors (a spark job's): freed with it
	started time.Time
	accels  int64
	cpu     int64
}

// preempt finds the low jobs in pools whose eviction makes a's job j fit, never more than
// needed: for a single replica, the node needing the fewest victims (then
// the least resources, then the most recently started); for gangs, victims
// added most recently started first until the gang fits, then pruned. If j
// still cannot fit, nothing is evicted: a preemption that would not let
// it run stops nobody. The freed resources are
// reserved for j; the victims' tasks keep holding them until they stop.
// forced are victims that go whatever else is needed (the low jobs
// mounting a volume j waits for): with them gone, the fewest further
// victims that make j fit are added.
func (w *world) preempt(a ask, pools []int16, forced []*victim) []Preemption {
	j := a.j
	si := 0
	if len(w.liveOf[j.ID]) > 0 {
		si = j.Shape
	}
	s := j.ShapeAt(si)
	missing := w.missing(j, s.Replicas)
	if len(missing) == 0 {
		return nil
	}
	required := len(missing)
	if !j.IsGang() {
		required = min(len(missing), max(1, j.MinAvailable-len(w.liveOf[j.ID])))
	}
	missing = missing[:required]
	for _, cl := range w.clusterOrder(a, s) {
		c := w.newCtx(a, s, pools, cl)
		for _, v := range forced {
			w.evict(v) // their tasks are off: no candidates
		}
		var chosen []*victim
		if len(forced) > 0 && w.fitsAll(c, required) {
			chosen = slices.Clone(forced)
		} else if cands := w.candidates(c); len(cands) > 0 {
			if !j.IsGang() && required == 1 {
				chosen = w.victimsOneNode(c, cands)
			} else {
				chosen = w.victimsGang(c, cands, missing)
			}
			if chosen != nil {
				chosen = append(slices.Clone(forced), chosen...)
			}
		}
		for _, v := range forced {
			w.unevict(v)
		}
		if chosen == nil {
			continue
		}
		return w.commitPreemption(c, chosen, missing)
	}
	return nil
}

// candidates lists low jobs with live tasks, or room held for a spark
// job's minimum executors, on nodes c (or the executors placed with it)
// may use.
func (w *world) candidates(c *jobCtx) []*victim {
	byJob := map[structs.JobID]*victim{}
	var out []*victim
	add := func(j *structs.Job) {
		if j == nil || j.Priority != structs.PriorityLow || w.victim[j.ID] || w.off[j.ID] || byJob[j.ID] != nil {
			return
		}
		v := w.victimOf(j)
		byJob[j.ID] = v
		out = append(out, v)
	}
	scan := func(c *jobCtx) {
		for _, lvl := range c.levels {
			for _, gi := range lvl {
				if w.groups[gi].low == 0 {
					continue
				}
				for _, ni := range w.groups[gi].nodes {
					nd := &w.nodes[ni]
					if len(nd.tasks)+len(nd.holds) == 0 || w.fails(c, ni, askRoom) != rOK {
						continue
					}
					for _, k := range nd.tasks {
						if wt := &w.tasks[k]; !wt.off && wt.t.Priority == structs.PriorityLow {
							add(wt.job)
						}
					}
					for _, h := range nd.holds {
						if r := &w.holds[h]; r.Kind == ReserveMinExecutors {
							add(w.snap.Jobs[r.Job])
						}
					}
				}
			}
		}
	}
	scan(c)
	if c.exec != nil {
		scan(c.exec)
	}
	// Least work lost first: most recently started, then smallest, then ID.
	slices.SortFunc(out, func(a, b *victim) int {
		if c := b.started.Compare(a.started); c != 0 {
			return c
		}
		if a.accels != b.accels {
			return cmp.Compare(a.accels, b.accels)
		}
		if a.cpu != b.cpu {
			return cmp.Compare(a.cpu, b.cpu)
		}
		return cmp.Compare(a.job.ID, b.job.ID)
	})
	return out
}

// victimOf is job j as a victim: every live task of it.
func (w *world) victimOf(j *structs.Job) *victim {
	v := &victim{job: j}
	for _, tk := range w.liveTasks(j.ID) {
		t := w.tasks[tk].t
		v.tasks = append(v.tasks, tk)
		v.accels += popcount(t.Accels)
		v.cpu += t.Resources.MilliCPU
		if t.StartedAt.After(v.started) {
			v.started = t.StartedAt
		}
		if t.ScheduledAt.After(v.started) {
			v.started = t.ScheduledAt
		}
	}
	for _, r := range w.holds {
		if r.Kind == ReserveMinExecutors && r.Job == j.ID {
			if ni, ok := w.byName[r.Node]; ok {
				v.held = append(v.held, ni)
				v.accels += r.Resources.Accels
				v.cpu += r.Resources.MilliCPU
			}
		}
	}
	return v
}

// liveTasks lists every task of job id that holds resources and is not
// already being stopped.
func (w *world) liveTasks(id structs.JobID) []int32 {
	var out []int32
	for k := range w.tasks {
		wt := &w.tasks[k]
		if !wt.off && wt.t.Job == id && wt.t.State != structs.TaskStopping {
			out = append(out, int32(k))
		}
	}
	return out
}

func (w *world) evict(v *victim) {
	for _, k := range v.tasks {
		w.removeTask(k)
	}
	if len(v.held) > 0 {
		if w.off == nil {
			w.off = map[structs.JobID]bool{}
		}
		w.off[v.job.ID] = true
	}
}

func (w *world) unevict(v *victim) {
	for _, k := range v.tasks {
		w.restoreTask(k)
	}
	delete(w.off, v.job.ID)
}

// victimsOneNode picks, for a single replica, the node whose cheapest
// sufficient set of victims is smallest.
func (w *world) victimsOneNode(c *jobCtx, cands []*victim) []*victim {
	onNode := map[int32][]*victim{}
	var nodes []int32
	for _, v := range cands {
		seen := map[int32]bool{}
		nis := make([]int32, 0, len(v.tasks)+len(v.held))
		for _, k := range v.tasks {
			nis = append(nis, w.tasks[k].ni)
		}
		for _, ni := range append(nis, v.held...) {
			if ni < 0 || seen[ni] {
				continue
			}
			seen[ni] = true
			if onNode[ni] == nil {
				nodes = append(nodes, ni)
			}
			onNode[ni] = append(onNode[ni], v)
		}
	}
	slices.Sort(nodes)
	var best []*victim
	var bestCost [3]int64
	for _, ni := range nodes {
		if w.fails(c, ni, askRoom) != rOK {
			continue
		}
		set := w.cheapestSet(onNode[ni], func() bool { return w.fitsNode(c, ni) })
		if set == nil {
			continue
		}
		cost := setCost(set)
		if best == nil || less3(cost, bestCost) {
			best, bestCost = set, cost
		}
	}
	return best
}

// victimsGang adds victims in order until the replicas fit, then prunes;
// within one domain of the gang's topology if it asks for one.
func (w *world) victimsGang(c *jobCtx, cands []*victim, missing []int) []*victim {
	if c.topo != nil {
		return w.victimsTopo(c, cands, len(missing))
	}
	fits := func() bool { return w.fitsAll(c, len(missing)) }
	return w.cheapestSet(cands, fits)
}

// cheapestSet returns the cheaper (fewest victims, then fewest resources)
// of two minimal sets: one built from the most recently started victims
// first (least work lost), one from the largest first (fewest victims).
func (w *world) cheapestSet(cands []*victim, fits func() bool) []*victim {
	recent := w.minimalSet(cands, fits)
	if recent == nil {
		return nil
	}
	bySize := slices.Clone(cands)
	slices.SortStableFunc(bySize, func(a, b *victim) int {
		if a.accels != b.accels {
			return cmp.Compare(b.accels, a.accels)
		}
		return cmp.Compare(b.cpu, a.cpu)
	})
	large := w.minimalSet(bySize, fits)
	if large != nil && less3(setCost(large), setCost(recent)) {
		return large
	}
	return recent
}

// minimalSet evicts candidates in order until fits() holds, then puts back
// every victim (largest first) whose return still lets it fit. It returns
// nil, with nothing evicted, if even all candidates are not enough.
func (w *world) minimalSet(cands []*victim, fits func() bool) []*victim {
	var set []*victim
	ok := false
	for _, v := range cands {
		w.evict(v)
		set = append(set, v)
		if fits() {
			ok = true
			break
		}
	}
	if !ok {
		for _, v := range set {
			w.unevict(v)
		}
		return nil
	}
	order := slices.Clone(set)
	slices.SortStableFunc(order, func(a, b *victim) int {
		if a.accels != b.accels {
			return cmp.Compare(b.accels, a.accels)
		}
		return cmp.Compare(b.cpu, a.cpu)
	})
	for _, v := range order {
		w.unevict(v)
		if fits() {
			set = slices.DeleteFunc(set, func(x *victim) bool { return x == v })
			continue
		}
		w.evict(v)
	}
	for _, v := range set {
		w.unevict(v)
	}
	return set
}

// fitsAll reports whether n replicas of c fit now (trying each pool level;
// a gang in one pool), leaving w unchanged.
func (w *world) fitsAll(c *jobCtx, n int) bool {
	gang := c.j.IsGang()
	var as, held []assignment
	for lvl := range c.levels {
		if gang {
			if as, held = w.placeGang(c, lvl, n); as != nil {
				break
			}
			continue
		}
		got := w.placeReplicas(c, lvl, n-len(as), false)
		as = append(as, got...)
		if len(as) == n {
			break
		}
	}
	ok := len(as) == n
	w.undoAll(held)
	w.undoAll(as)
	c.used = c.used[:0]
	if c.j.Affinity.SpreadReplicas {
		for _, k := range w.liveOf[c.j.ID] {
			if ni := w.tasks[k].ni; ni >= 0 {
				c.used = append(c.used, ni)
			}
		}
	}
	return ok
}

// commitPreemption evicts chosen for real in this plan: victims are marked,
// the replicas' future place is reserved for c's job.
func (w *world) commitPreemption(c *jobCtx, chosen []*victim, missing []int) []Preemption {
	for _, v := range chosen {
		w.evict(v)
	}
	var as, held []assignment
	gang := c.j.IsGang()
	for lvl := range c.levels {
		if gang {
			if as, held = w.placeGang(c, lvl, len(missing)); as != nil {
				break
			}
			continue
		}
		got := w.placeReplicas(c, lvl, len(missing)-len(as), false)
		as = append(as, got...)
		if len(as) == len(missing) {
			break
		}
	}
	for _, a := range append(slices.Clone(as), held...) {
		// A spark job's minimum executors' room too: it is placed with
		// its driver.
		w.hold(Reservation{Job: c.j.ID, Node: w.nodes[a.ni].n.Name, Resources: a.res, Kind: ReservePreemption})
	}
	w.undoAll(held)
	w.undoAll(as)
	out := make([]Preemption, 0, len(chosen))
	for _, v := range chosen {
		w.unevict(v)
		w.victim[v.job.ID] = true
		p := Preemption{Victim: v.job.ID, Preemptor: c.j.ID}
		for _, k := range v.tasks {
			p.Tasks = append(p.Tasks, w.tasks[k].t.ID)
		}
		out = append(out, p)
	}
	return out
}

func setCost(set []*victim) [3]int64 {
	var acc, cpu int64
	for _, v := range set {
		acc += v.accels
		cpu += v.cpu
	}
	return [3]int64{int64(len(set)), acc, cpu}
}

func less3(a, b [3]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
