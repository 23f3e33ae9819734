package sched

import (
	"cmp"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Topology (Snapshot.Topology): a cluster names node labels as its
// levels, widest first (zone, block, rack); a node's domain at a level is
// its values of the labels down to that one. A gang or spark job asking
// topology {required: L} is placed with all its replicas (a driver with
// its minimum executors) in one domain of level L, or waits; {preferred:
// L} tries the domains of L, then of each wider level, then anywhere.
// Among the domains where it fits, the one left with the fewest free
// slots of its shape (best fit), so whole domains stay whole for the
// gangs that need them.
//
// The index: each domain keeps, per group with nodes in it, a bucket
// index over those nodes (the group's index cut by domain), moved with
// the group's own as nodes fill and free (refile). Choosing a domain
// reads only the bucket sizes of the job's groups' parts; placing in one
// walks only its nodes (findNode with jobCtx.dom).

// topology is a world's domains.
type topology struct {
	levels [][]string        // per cluster index: its levels (label keys), widest first
	doms   []tdomain         // every domain, by cluster, level, path
	at     [][][]int32       // per cluster, per level: its domains, in order
	parts  [][][]part        // per group, per level of its cluster: its nodes' domains' indexes
	pos    [][]int32         // per level: positions in the domains' indexes (buckets.pos)
	byName map[string][]int8 // a job's level -> its index in each cluster's levels (-1: none)
	// Scratch space of domainsFor: slots per domain for replicas and
	// executors, the domains with some, the result.
	est, eest         []int
	touched, etouched []int32
	order             []int32
}

// tdomain is one domain: a value of a level's label (within the values of
// the wider levels) in one cluster.
type tdomain struct {
	cluster int16
	level   int8
	name    string // its label value; the path from the widest level where two share one
	parts   []part // one per group with nodes in it
	nodes   int
}

// part is a group's nodes in one domain, indexed by key like the group's.
type part struct {
	dom   int32
	group int32
	idx   *buckets
}

// buildTopology computes each node's domains and the domains' indexes
// (after the groups are built and ordered).
func (w *world) buildTopology() {
	t := &w.topo
	if len(w.snap.Topology) == 0 {
		return
	}
	t.levels = make([][]string, len(w.clusters))
	maxL := 0
	for i, c := range w.clusters {
		t.levels[i] = w.snap.Topology[c]
		maxL = max(maxL, len(t.levels[i]))
	}
	if maxL == 0 {
		return
	}
	// A domain is its parent (the node's domain one level wider, -1 at
	// the widest or where the node has none there) and its label value.
	type key struct {
		cl     int16
		lvl    int8
		parent int32
		v      string
	}
	ids := map[key]int32{}
	var keys []key
	total := 0
	for i := range w.nodes {
		total += len(t.levels[w.nodes[i].cluster])
	}
	doms, tidx := make([]int32, total), make([]*buckets, 0, total) // backing of every node's doms and tidx
	for i := range w.nodes {
		n := &w.nodes[i]
		lv := t.levels[n.cluster]
		if len(lv) == 0 {
			continue
		}
		n.doms, doms = doms[:len(lv):len(lv)], doms[len(lv):]
		parent := int32(-1)
		for l, label := range lv {
			v := n.n.Tags[label]
			if v == "" {
				n.doms[l] = -1
				parent = -1
				continue
			}
			k := key{n.cluster, int8(l), parent, v}
			id, ok := ids[k]
			if !ok {
				id = int32(len(keys))
				ids[k] = id
				keys = append(keys, k)
			}
			n.doms[l], parent = id, id
		}
	}
	// Domains in order (cluster, level, values from the widest level), so
	// ties break the same way whatever the node order.
	paths := make([]string, len(keys)) // keys[i]'s values joined by "/"; parents come first
	for i, k := range keys {
		paths[i] = k.v
		if k.parent >= 0 {
			paths[i] = paths[k.parent] + "/" + k.v
		} else if k.lvl > 0 {
			paths[i] = strings.Repeat("/", int(k.lvl)) + k.v
		}
	}
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ka, kb := keys[a], keys[b]
		if ka.cl != kb.cl {
			return cmp.Compare(ka.cl, kb.cl)
		}
		if ka.lvl != kb.lvl {
			return cmp.Compare(ka.lvl, kb.lvl)
		}
		return strings.Compare(paths[a], paths[b])
	})
	remap := make([]int32, len(keys))
	t.doms = make([]tdomain, len(keys))
	t.at = make([][][]int32, len(w.clusters))
	for cl := range t.at {
		t.at[cl] = make([][]int32, len(t.levels[cl]))
	}
	type value struct {
		cl  int16
		lvl int8
		v   string
	}
	same := map[value]int{} // domains of a level sharing a value
	for _, k := range keys {
		same[value{k.cl, k.lvl, k.v}]++
	}
	for newID, id := range order {
		k := keys[id]
		remap[id] = int32(newID)
		name := k.v
		if same[value{k.cl, k.lvl, k.v}] > 1 {
			name = paths[id]
		}
		t.doms[newID] = tdomain{cluster: k.cl, level: k.lvl, name: name}
		t.at[k.cl][k.lvl] = append(t.at[k.cl][k.lvl], int32(newID))
	}
	t.pos = make([][]int32, maxL)
	for l := range t.pos {
		t.pos[l] = make([]int32, len(w.nodes))
	}
	t.parts = make([][][]part, len(w.groups))
	for i := range w.nodes {
		n := &w.nodes[i]
		if n.doms == nil {
			continue
		}
		for l, id := range n.doms {
			if id < 0 {
				continue
			}
			id = remap[id]
			n.doms[l] = id
			d := &t.doms[id]
			d.nodes++
			tidx = append(tidx, w.partOf(id, n.group, l))
		}
		n.tidx, tidx = tidx[:len(tidx):len(tidx)], tidx[len(tidx):]
	}
	t.est, t.eest = make([]int, len(t.doms)), make([]int, len(t.doms))
}

// partOf returns the index of group g's nodes in domain id (of level l),
// making it if need be.
func (w *world) partOf(id int32, g int32, l int) *buckets {
	t := &w.topo
	d := &t.doms[id]
	for _, p := range d.parts {
		if p.group == g {
			return p.idx
		}
	}
	p := part{dom: id, group: g, idx: newBuckets(w.groups[g].idx.maxKey(), t.pos[l])}
	d.parts = append(d.parts, p)
	if t.parts[g] == nil {
		t.parts[g] = make([][]part, len(t.levels[w.groups[g].cluster]))
	}
	t.parts[g][l] = append(t.parts[g][l], p)
	return p.idx
}

// levelsOf returns, per cluster index, the index of level (a job's
// level: a label key or its short name) among that cluster's levels, or
// -1 (cached per world). Shared: read only.
func (w *world) levelsOf(level string) []int8 {
	t := &w.topo
	if l, ok := t.byName[level]; ok {
		return l
	}
	out := make([]int8, len(w.clusters))
	for cl := range out {
		out[cl] = -1
		if cl < len(t.levels) {
			out[cl] = int8(structs.LevelIndex(t.levels[cl], level))
		}
	}
	if t.byName == nil {
		t.byName = map[string][]int8{}
	}
	t.byName[level] = out
	return out
}

// required reports whether c's job must be placed in one domain.
func (c *jobCtx) required() bool { return c.topo != nil && c.topo.Required != "" }

// setDom restricts c (and the executors placed with it) to domain d (-1: none).
func (c *jobCtx) setDom(d int32) {
	c.dom = d
	if c.exec != nil {
		c.exec.dom = d
	}
}

// inDomain reports whether node n is where c's topology lets it go: in
// c.dom when set, else in some domain of c's required level.
func (w *world) inDomain(c *jobCtx, n *wnode) bool {
	if c.dom >= 0 {
		d := &w.topo.doms[c.dom]
		return n.cluster == d.cluster && n.doms != nil && n.doms[d.level] == c.dom
	}
	l := c.tl[n.cluster]
	return l >= 0 && n.doms != nil && n.doms[l] >= 0
}

// idxOf is the index findNode walks for group gi: the group's, or its
// part in c.dom (nil when it has no nodes there).
func (w *world) idxOf(c *jobCtx, gi int32) *buckets {
	if c.dom < 0 {
		return w.groups[gi].idx
	}
	for _, p := range w.topo.doms[c.dom].parts {
		if p.group == gi {
			return p.idx
		}
	}
	return nil
}

// placeTopo places gang c at pool level lvl in one domain (placeGang):
// those of its level, best fit first; if it asks for the level only as
// a preference, then those of each wider level, then anywhere.
func (w *world) placeTopo(c *jobCtx, lvl, n int) (as, held []assignment) {
	cl := w.clusterOfLevel(c, lvl)
	if cl < 0 {
		return nil, nil
	}
	top := int(c.tl[cl])
	for l := top; l >= 0; l-- {
		for _, d := range w.domainsFor(c, lvl, cl, l, n) {
			c.setDom(d)
			as, held = w.placeGangIn(c, lvl, n)
			c.setDom(-1)
			if as != nil {
				return as, held
			}
		}
		if c.required() {
			return nil, nil
		}
	}
	if c.required() {
		return nil, nil // the cluster has no such level
	}
	return w.placeGangIn(c, lvl, n)
}

// clusterOfLevel is the cluster of the groups at c's pool level lvl (a
// placement context is one cluster's), -1 when it has none.
func (w *world) clusterOfLevel(c *jobCtx, lvl int) int16 {
	for _, gi := range c.levels[lvl] {
		return w.groups[gi].cluster
	}
	if c.exec != nil {
		for _, gi := range c.exec.levels[lvl] {
			return w.groups[gi].cluster
		}
	}
	return -1
}

// domainsFor lists the domains of level l in cluster cl where n replicas
// of c (and its executors) may fit at pool level lvl, by their bucket
// sizes: the fewest free slots of c's shape first, then in domain order.
// The slice is scratch, valid until the next call.
func (w *world) domainsFor(c *jobCtx, lvl int, cl int16, l int, n int) []int32 {
	t := &w.topo
	t.order = t.order[:0]
	if l < 0 || l >= len(t.levels[cl]) {
		return nil
	}
	t.touched = w.estimate(c, lvl, l, t.est, t.touched[:0])
	for _, d := range t.touched {
		if t.est[d] >= n {
			t.order = append(t.order, d)
		}
	}
	if c.exec != nil && len(t.order) > 0 {
		t.etouched = w.estimate(c.exec, lvl, l, t.eest, t.etouched[:0])
		t.order = slices.DeleteFunc(t.order, func(d int32) bool { return t.eest[d] < c.execN })
		for _, d := range t.etouched {
			t.eest[d] = 0
		}
	}
	slices.SortFunc(t.order, func(a, b int32) int {
		if t.est[a] != t.est[b] {
			return cmp.Compare(t.est[a], t.est[b])
		}
		return cmp.Compare(a, b)
	})
	for _, d := range t.touched {
		t.est[d] = 0
	}
	return t.order
}

// estimate adds to est, for each domain of level l holding nodes of c's
// groups at pool level lvl, how many replicas of c its nodes' free keys
// hold (an upper bound: rules other than room are not asked), and
// appends the domains it raises from 0 to touched.
func (w *world) estimate(c *jobCtx, lvl, l int, est []int, touched []int32) []int32 {
	t := &w.topo
	r := c.shape.Resources
	need := int(r.MilliCPU / 1000)
	if r.Accels > 0 {
		need = int(r.Accels)
	}
	for _, gi := range c.levels[lvl] {
		if t.parts[gi] == nil || l >= len(t.parts[gi]) {
			continue
		}
		for _, p := range t.parts[gi][l] {
			s := slotsByKey(p.idx, need, c.j.Affinity.SpreadReplicas)
			if s == 0 {
				continue
			}
			if est[p.dom] == 0 {
				touched = append(touched, p.dom)
			}
			est[p.dom] = min(est[p.dom]+s, 1<<30)
		}
	}
	return touched
}

// slotsByKey counts the replicas needing need (accelerators, or whole
// cores) that the nodes of index b hold by their keys; one per node
// when spread.
func slotsByKey(b *buckets, need int, spread bool) int {
	s := 0
	for k := min(need, b.maxKey()); k <= b.maxKey(); k++ {
		c := len(b.b[k])
		if c == 0 {
			continue
		}
		per := 1 << 20
		if need > 0 {
			per = max(k/need, 1) // the last CPU bucket is clamped: it holds one at least
		}
		if spread {
			per = 1
		}
		s = min(s+c*per, 1<<30)
	}
	return s
}

// domainName is how domain d is called: "rack r3".
func (w *world) domainName(d int32) string {
	dm := &w.topo.doms[d]
	return structs.LevelName(w.topo.levels[dm.cluster][dm.level]) + " " + dm.name
}

// domainSlots counts, per domain of level l, how many replicas of c fit
// on the nodes of its pool level lvl there: on empty nodes (ever) and in
// what is free now.
func (w *world) domainSlots(c *jobCtx, lvl, l int) (ever, now map[int32]int) {
	ever, now = map[int32]int{}, map[int32]int{}
	for _, gi := range c.levels[lvl] {
		for _, ni := range w.groups[gi].nodes {
			n := &w.nodes[ni]
			if n.doms == nil || l >= len(n.doms) || n.doms[l] < 0 || w.fails(c, ni, askRoom) != rOK {
				continue
			}
			d := n.doms[l]
			ever[d] += w.slots(c, ni, true, false)
			now[d] += w.slots(c, ni, false, false)
		}
	}
	return ever, now
}

// gangDomain picks the domain a blocked gang c (at pool level lvl)
// reserves in: of its level (then, as it only prefers it, of each wider
// level) one whose empty nodes hold it (its executors too), the one with
// the most free now, so it is whole soonest. ok is false when none
// holds it; d is -1 when it may go anywhere.
func (w *world) gangDomain(c *jobCtx, lvl int) (d int32, ok bool) {
	cl := w.clusterOfLevel(c, lvl)
	if cl < 0 {
		return -1, false
	}
	for l := int(c.tl[cl]); l >= 0; l-- {
		ever, now := w.domainSlots(c, lvl, l)
		var eever, enow map[int32]int
		if c.exec != nil {
			eever, enow = w.domainSlots(c.exec, lvl, l)
		}
		best, bestNow := int32(-1), -1
		for _, id := range w.topo.at[cl][l] {
			if ever[id] < c.shape.Replicas || (c.exec != nil && eever[id] < c.execN) {
				continue
			}
			if free := now[id] + enow[id]; free > bestNow {
				best, bestNow = id, free
			}
		}
		if best >= 0 {
			return best, true
		}
		if c.required() {
			return -1, false
		}
	}
	return -1, !c.required()
}

// executorDomains lists where one more executor of c's spark job, whose
// driver runs on node ni, may go, in order: the driver's domain of its
// topology level, and if it only prefers it, those of each wider level,
// then anywhere (-1). Without topology: anywhere. Empty when it requires
// a level and the driver's node is in no domain of it.
func (w *world) executorDomains(c *jobCtx, ni int32) []int32 {
	if c.topo == nil {
		return []int32{-1}
	}
	n := &w.nodes[ni]
	var out []int32
	for l := int(c.tl[n.cluster]); l >= 0; l-- {
		if n.doms != nil && n.doms[l] >= 0 {
			out = append(out, n.doms[l])
		}
		if c.required() {
			return out
		}
	}
	return append(out, -1)
}
