package sched

import (
	"cmp"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// gangPool returns the first cluster and pool a's job may use where its
// gang could fit on empty nodes: where its starvation reservation is made.
func (w *world) gangPool(a ask) (cluster, pool int16, ok bool) {
	j := a.j
	s := j.ShapeAt(0)
	for _, cl := range w.clusterOrder(a, s) {
		c := w.newCtx(a, s, w.eligiblePools(j), cl)
		for lvl, p := range c.pools {
			if w.everSlots(c, lvl) >= s.Replicas && (c.exec == nil || w.everSlots(c.exec, lvl) >= c.execN) {
				return cl, p, true
			}
		}
	}
	return 0, 0, false
}

// everSlots counts how many replicas of c would fit on the empty nodes of
// pool level lvl (one per node with spreadReplicas); in the domain that
// holds most, if it requires one.
func (w *world) everSlots(c *jobCtx, lvl int) int {
	if cl := w.clusterOfLevel(c, lvl); c.required() && cl >= 0 && c.tl[cl] >= 0 {
		ever, _ := w.domainSlots(c, lvl, int(c.tl[cl]))
		most := 0
		for _, v := range ever {
			most = max(most, v)
		}
		return most
	}
	n := 0
	for _, gi := range c.levels[lvl] {
		for _, ni := range w.groups[gi].nodes {
			if w.fails(c, ni, askRoom) != rOK {
				continue
			}
			n += w.slots(c, ni, true, false)
		}
	}
	return n
}

// slots is how many replicas of c node ni holds: on an empty node if empty
// (counting its quarantined accelerators too if whole), else in what is
// free now; at most one with spreadReplicas.
func (w *world) slots(c *jobCtx, ni int32, empty, whole bool) int {
	n := w.packed(c, ni, empty, whole)
	if c.j.Affinity.SpreadReplicas {
		n = min(n, 1)
	}
	return n
}

// packed is slots were replicas of c allowed on one node.
func (w *world) packed(c *jobCtx, ni int32, empty, whole bool) int {
	r := c.shape.Resources
	a := w.alloc(ni, r)
	nd := &w.nodes[ni]
	capa := nd.n.Capacity
	cpu, mem, acc := capa.MilliCPU, capa.Memory, nd.healthy
	if whole {
		acc = capa.Accels
	}
	if !empty {
		hc, hm, ha, _ := w.held(c, ni)
		cpu, mem, acc = nd.freeCPU-hc, nd.freeMem-hm, popcount(nd.accels)-ha
	}
	n := int64(1 << 30)
	if a.Accels > 0 {
		n = min(n, acc/a.Accels)
	}
	if a.MilliCPU > 0 {
		n = min(n, cpu/a.MilliCPU)
	}
	if a.Memory > 0 {
		n = min(n, mem/a.Memory)
	}
	for d, c := range a.Devices {
		have := capa.Devices[d]
		if !empty {
			have = nd.devices[d]
		}
		if c > 0 {
			n = min(n, have/c)
		}
	}
	if n == 1<<30 || n < 0 {
		n = 0
	}
	return int(n)
}

// reserveGang reserves nodes of pool p in cluster cl for gang a (a spark
// driver and its minimum executors), in one domain of its topology if it
// asks for one, choosing those with the most free resources now so the
// gang is whole soonest. It reports whether every
// replica (and executor) got a reservation.
func (w *world) reserveGang(a ask, cl, p int16) bool {
	s := a.j.ShapeAt(0)
	c := w.newCtx(a, s, []int16{p}, cl)
	if c.topo != nil {
		// In one domain of its topology (topology.go).
		d, ok := w.gangDomain(c, 0)
		if !ok {
			return false
		}
		c.setDom(d)
	}
	taken := map[int32]structs.Resources{} // reserved on each node so far
	rs, ok := w.reserveSlots(c, s.Replicas, taken)
	if ok && c.exec != nil {
		var more []Reservation
		more, ok = w.reserveSlots(c.exec, c.execN, taken)
		rs = append(rs, more...)
	}
	if !ok {
		return false
	}
	for _, r := range rs {
		w.hold(r)
	}
	return true
}

// reserveSlots picks n places for replicas of c at its level 0 on nodes
// without reservations, those with the most free resources now first,
// each node holding what fits on it empty less what taken reserves there
// already (which it adds to). It reports whether all n got one.
func (w *world) reserveSlots(c *jobCtx, n int, taken map[int32]structs.Resources) ([]Reservation, bool) {
	r := c.shape.Resources
	type cand struct {
		ni   int32
		free int64
	}
	var cands []cand
	for _, gi := range c.levels[0] {
		for _, ni := range w.groups[gi].nodes {
			if len(w.nodes[ni].holds) > 0 || w.fails(c, ni, askRoom) != rOK {
				continue
			}
			free := w.nodes[ni].freeCPU
			if r.Accels > 0 {
				free = popcount(w.nodes[ni].accels)
			}
			cands = append(cands, cand{ni, free})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.free, a.free) })
	var rs []Reservation
	left := n
	for _, cd := range cands {
		a := w.alloc(cd.ni, r)
		for k := w.slotsLeft(c, cd.ni, taken[cd.ni]); k > 0 && left > 0; k-- {
			rs = append(rs, Reservation{Job: c.j.ID, Node: w.nodes[cd.ni].n.Name, Resources: a, Kind: ReserveGang})
			t := taken[cd.ni]
			t.MilliCPU, t.Memory, t.Accels = t.MilliCPU+a.MilliCPU, t.Memory+a.Memory, t.Accels+a.Accels
			taken[cd.ni] = t
			left--
		}
	}
	return rs, left == 0
}

// slotsLeft is how many replicas of c node ni holds empty, less what
// is reserved there already (CPU, memory, accelerators).
func (w *world) slotsLeft(c *jobCtx, ni int32, taken structs.Resources) int {
	n := w.slots(c, ni, true, false)
	if (taken.MilliCPU == 0 && taken.Memory == 0 && taken.Accels == 0) || n == 0 {
		return n
	}
	a := w.alloc(ni, c.shape.Resources)
	capa := w.nodes[ni].n.Capacity
	k := int64(n)
	if a.Accels > 0 {
		k = min(k, (w.nodes[ni].healthy-taken.Accels)/a.Accels)
	}
	if a.MilliCPU > 0 {
		k = min(k, (capa.MilliCPU-taken.MilliCPU)/a.MilliCPU)
	}
	if a.Memory > 0 {
		k = min(k, (capa.Memory-taken.Memory)/a.Memory)
	}
	return int(max(k, 0))
}
