package sched

import "slices"

// victimsTopo chooses the victims for gang c (n replicas) within one
// domain of its topology: for each domain of its level where candidates
// run (or hold room), the cheapest set there that makes c fit there
// (cheapestSet); of those, the cheapest, then the first in domain order.
// A gang that only prefers the level tries each wider level, then
// victims anywhere. c is left held to the chosen domain, where
// commitPreemption reserves its room.
func (w *world) victimsTopo(c *jobCtx, cands []*victim, n int) []*victim {
	fits := func() bool { return w.fitsAll(c, n) }
	cl := int16(-1)
	for lvl := range c.levels {
		if cl = w.clusterOfLevel(c, lvl); cl >= 0 {
			break
		}
	}
	if cl >= 0 {
		for l := int(c.tl[cl]); l >= 0; l-- {
			byDom, doms := w.victimsByDomain(cands, cl, l)
			var best []*victim
			bestDom := int32(-1)
			for _, d := range doms {
				c.setDom(d)
				if !w.fitsWithout(byDom[d], fits) {
					continue
				}
				set := w.cheapestSet(byDom[d], fits)
				if set != nil && (best == nil || w.setCost(set).less(w.setCost(best))) {
					best, bestDom = set, d
				}
			}
			c.setDom(bestDom)
			if best != nil {
				return best
			}
			if c.required() {
				return nil
			}
		}
	}
	if c.required() {
		return nil
	}
	return w.cheapestSet(cands, fits)
}

// victimsByDomain lists, per domain of level l in cluster cl, the
// candidates with a task or held room on its nodes (in cands' order),
// and those domains in order.
func (w *world) victimsByDomain(cands []*victim, cl int16, l int) (map[int32][]*victim, []int32) {
	byDom := map[int32][]*victim{}
	var doms []int32
	for _, v := range cands {
		var seen []int32
		add := func(ni int32) {
			if ni < 0 {
				return
			}
			nd := &w.nodes[ni]
			if nd.cluster != cl || nd.doms == nil || nd.doms[l] < 0 || slices.Contains(seen, nd.doms[l]) {
				return
			}
			d := nd.doms[l]
			seen = append(seen, d)
			if byDom[d] == nil {
				doms = append(doms, d)
			}
			byDom[d] = append(byDom[d], v)
		}
		for _, k := range v.tasks {
			add(w.tasks[k].ni)
		}
		for _, ni := range v.held {
			add(ni)
		}
	}
	slices.Sort(doms)
	return byDom, doms
}

// fitsWithout reports whether fits holds with every victim in vs evicted
// (leaving them in place).
func (w *world) fitsWithout(vs []*victim, fits func() bool) bool {
	for _, v := range vs {
		w.evict(v)
	}
	ok := fits()
	for _, v := range vs {
		w.unevict(v)
	}
	return ok
}
