package sched

import (
	"cmp"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// preempt finds the low work in pools whose eviction makes a's job j
// fit, never more than needed: for a single replica, the node needing the
// fewest victims (then the least work lost, then the least resources:
// cost);
// for gangs, victims added most recently started first until the gang
// fits, then pruned. Victims are whole jobs, but a low service loses only
// the replicas needed (candidates). If j still cannot fit, nothing is
// evicted: a preemption that would not let it run stops nobody. The freed
// resources are reserved for j; the victims' tasks keep holding them until
// they stop. forced are victims that go whatever else is needed (the low
// jobs mounting a volume j waits for): with them gone, the fewest further
// victims that make j fit are added.
//
// Work younger than its pool's minimum runtime is left out while another
// choice exists; when the only choices include such work, nothing is
// evicted and the protection returned says until when j waits.
func (w *world) preempt(a ask, pools []int16, forced []*victim) ([]Preemption, *protection) {
	j := a.j
	si := 0
	if len(w.liveOf[j.ID]) > 0 {
		si = j.Shape
	}
	s := j.ShapeAt(si)
	missing := w.missing(j, s.Replicas)
	if len(missing) == 0 {
		return nil, nil
	}
	required := len(missing)
	if !j.IsGang() {
		required = min(len(missing), max(1, j.MinAvailable-len(w.liveOf[j.ID])))
	}
	missing = missing[:required]
	clusters := w.clusterOrder(a, s)
	anyYoung := false
	for _, withYoung := range []bool{false, true} {
		if withYoung && !anyYoung {
			break
		}
		for _, cl := range clusters {
			c := w.newCtx(a, s, pools, cl)
			for _, v := range forced {
				w.evict(v) // their tasks are off: no candidates
			}
			var chosen []*victim
			if len(forced) > 0 && w.fitsAll(c, required) {
				chosen = slices.Clone(forced)
			} else if cands := w.candidates(c); len(cands) > 0 {
				if !withYoung {
					n := len(cands)
					cands = slices.DeleteFunc(cands, w.young)
					anyYoung = anyYoung || len(cands) < n
				}
				switch {
				case len(cands) == 0:
				case !j.IsGang() && required == 1:
					chosen = w.victimsOneNode(c, cands)
				default:
					chosen = w.victimsGang(c, cands, missing)
				}
				if chosen != nil {
					chosen = append(slices.Clone(forced), chosen...)
				}
			}
			for _, v := range forced {
				w.unevict(v)
			}
			switch {
			case chosen == nil:
			case withYoung:
				return nil, w.protectedBy(chosen)
			default:
				return w.commitPreemption(c, chosen, missing), nil
			}
		}
	}
	return nil, nil
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
	var bestCost cost
	for _, ni := range nodes {
		if w.fails(c, ni, askRoom) != rOK {
			continue
		}
		set := w.cheapestSet(onNode[ni], func() bool { return w.fitsNode(c, ni) })
		if set == nil {
			continue
		}
		sc := w.setCost(set)
		if best == nil || sc.less(bestCost) {
			best, bestCost = set, sc
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

// cheapestSet returns the cheaper (cost: fewest victims, then least work
// lost) of two minimal sets: one built from the most recently started victims
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
	if large != nil && w.setCost(large).less(w.setCost(recent)) {
		return large
	}
	return recent
}

// minimalSet evicts candidates in order until fits() holds, then puts back
// every victim (largest first, then oldest) whose return still lets it fit. It returns
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
		if a.cpu != b.cpu {
			return cmp.Compare(b.cpu, a.cpu)
		}
		return a.started.Compare(b.started) // the oldest goes back first: the least work is lost
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
	for _, v := range chosen {
		w.unevict(v)
	}
	return w.preemptions(c.j.ID, chosen)
}

// preemptions turns chosen victims into one Preemption per victim job,
// in the order chosen, and marks them: a whole job as a victim (it is not
// topped up or chosen again this cycle), a service's replicas as stopped.
// A service that loses every live replica is preempted whole.
func (w *world) preemptions(by structs.JobID, chosen []*victim) []Preemption {
	var out []Preemption
	at := map[structs.JobID]int{}
	for _, v := range chosen {
		i, ok := at[v.job.ID]
		if !ok {
			i = len(out)
			at[v.job.ID] = i
			out = append(out, Preemption{Victim: v.job.ID, Preemptor: by, Replicas: v.replica})
		}
		for _, k := range v.tasks {
			out[i].Tasks = append(out[i].Tasks, w.tasks[k].t.ID)
			if v.replica {
				if w.stopped == nil {
					w.stopped = map[int32]bool{}
				}
				w.stopped[k] = true
			}
		}
	}
	for i := range out {
		p := &out[i]
		if p.Replicas && len(p.Tasks) == len(w.liveTasks(p.Victim)) {
			p.Replicas = false // all of it
		}
		if !p.Replicas {
			w.victim[p.Victim] = true
		}
	}
	return out
}
