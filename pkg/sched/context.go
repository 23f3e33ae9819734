package sched

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/atom-sched/atom/pkg/structs"
)

// selector is a parsed label selector with its source text.
type selector struct {
	text string
	sel  labels.Selector
}

// ask is one job as a decision sees it: the job, and what this cycle
// knows about it beyond its spec.
type ask struct {
	j *structs.Job
	// only marks the clusters its volumes allow (volumePlaces); nil: any.
	only []bool
	// execPod is the executor Pod being placed (PlaceExecutor): the room
	// reserved for it (ReserveExecutor) is its own.
	execPod string
}

// jobCtx is the context of one job's question: what the rules (rules.go)
// read to place one shape of it in some pools of one cluster, computed
// once.
type jobCtx struct {
	ask
	shape   structs.Shape
	rules   ruleSet     // the rules that apply to it
	levels  [][]int32   // group indices per pool preference level
	tiers   [][][]int32 // per level: groups of equal bound-resource waste, least first
	pools   []int16     // the pool of each level
	nodePin int32       // -1 none; -2 pinned to an unknown node
	sel     *selector
	with    []labels.Selector
	away    []labels.Selector
	used    []int32 // nodes holding replicas of this job (spread)
	// topo is the job's topology (nil: none), tl the index of its level
	// among each cluster's levels (-1: the cluster has no such level),
	// dom the domain placement is held to now (-1: none; topology.go).
	topo *structs.JobTopology
	tl   []int8
	dom  int32
	// executor: it stands for one of a spark job's executors.
	executor bool
	// exec, for a spark job placed with its minimum executors, is the
	// context of one executor and execN how many (see newCtx); nil: none.
	exec  *jobCtx
	execN int
}

// noun is what one replica of c is called in reasons.
func (c *jobCtx) noun() string {
	if c.executor {
		return "executor"
	}
	return "replica"
}

// newCtx builds the context for placing shape s of job a. pools lists the
// pool indices the job may use, in preference order.
// Only nodes of cluster cl are considered (-1: every cluster).
// The context is the world's scratch one: valid until the next newCtx.
// For a spark job whose driver comes with its minimum executors in cl
// (sparkGang), exec is the context of one of those executors (the
// world's second scratch one) and execN how many.
func (w *world) newCtx(a ask, s structs.Shape, pools []int16, cl int16) *jobCtx {
	c := w.initCtx(&w.ctx, a, s, pools, cl)
	if n := w.sparkGang(a.j, cl); n > 0 {
		c.exec = w.execCtx(a, pools, cl)
		c.execN = n
	}
	return c
}

// execCtx is the context of one executor of spark job a in pools of
// cluster cl (-1: any), in the world's second scratch context.
func (w *world) execCtx(a ask, pools []int16, cl int16) *jobCtx {
	ej := w.executorJob(a.j)
	a.j = ej
	c := w.initCtx(&w.ectx, a, structs.Shape{Replicas: 1, Resources: ej.Resources}, pools, cl)
	c.executor = true
	return c
}

// initCtx fills c for placing shape s of job a (see newCtx) and returns it.
func (w *world) initCtx(c *jobCtx, a ask, s structs.Shape, pools []int16, cl int16) *jobCtx {
	w.describe(c, a, s, pools)
	lv := w.levels(pools, cl, s.Resources)
	c.levels, c.tiers = lv.flat, lv.tiers
	return c
}

// describe fills c with what the rules read for shape s of job a in
// pools (all but the groups to walk: levels), and returns it.
func (w *world) describe(c *jobCtx, a ask, s structs.Shape, pools []int16) *jobCtx {
	j := a.j
	*c = jobCtx{ask: a, shape: s, nodePin: -1, pools: pools, with: c.with[:0], away: c.away[:0], used: c.used[:0], dom: -1}
	if j.Topology != nil {
		c.topo, c.tl = j.Topology, w.levelsOf(j.Topology.Level())
	}
	if j.NodeName != "" {
		c.nodePin = -2
		if i, ok := w.byName[j.NodeName]; ok {
			c.nodePin = i
		}
	}
	if j.Selector != "" {
		c.sel = w.selector(j.Selector)
	}
	for _, s := range j.Affinity.WithJobs {
		if sel := w.selector(s); sel.sel != nil {
			c.with = append(c.with, sel.sel)
		}
	}
	for _, s := range j.Affinity.AwayFromJobs {
		if sel := w.selector(s); sel.sel != nil {
			c.away = append(c.away, sel.sel)
		}
	}
	if j.Affinity.SpreadReplicas {
		for _, k := range w.liveOf[j.ID] {
			if ni := w.tasks[k].ni; ni >= 0 {
				c.used = append(c.used, ni)
			}
		}
	}
	c.rules = applying(c)
	return c
}

// levelKey identifies a levels computation: the pools (at most 8 are
// keyed; more are not cached), cluster, node class and, for accelerator
// replicas, the CPU and memory asked (they decide the waste order).
type levelKey struct {
	pools     [8]int16
	n         int
	cl        int16
	accel     bool
	devices   bool
	accelType string
	cpu, mem  int64
}

// levelSet is the groups a replica may use, per pool level.
type levelSet struct {
	flat  [][]int32
	tiers [][][]int32
}

// levels returns the groups of each pool in pools (restricted to cluster cl
// unless -1) whose nodes can serve replicas asking r. Accelerator groups
// whose per-accelerator binding is below the request are left out; the rest
// are ordered in tiers of equal waste (bound CPU, then memory, beyond the
// request), least first: a replica goes where it strands the least CPU and
// memory, so CPU-rich accelerator nodes stay free for CPU-heavy replicas.
// The result is shared and read-only.
func (w *world) levels(pools []int16, cl int16, r structs.Resources) levelSet {
	k := levelKey{n: len(pools), cl: cl, accel: r.Accels > 0, devices: len(r.Devices) > 0, accelType: r.AccelType}
	if r.Accels > 0 {
		k.cpu, k.mem = r.MilliCPU, r.Memory
	}
	copy(k.pools[:], pools)
	cacheable := len(pools) <= len(k.pools)
	if cacheable {
		if l, ok := w.lvlCache[k]; ok {
			return l
		}
	}
	var out levelSet
	waste := func(g *group) (int64, int64) {
		if !g.accel {
			return 0, 0
		}
		return r.Accels*g.shareCPU - r.MilliCPU, r.Accels*g.shareMem - r.Memory
	}
	for _, p := range pools {
		var lvl []int32
		for gi, g := range w.groups {
			// The group rules (rPool, rClass), and rBound for the
			// group's binding: placement walks no other groups.
			if g.pool != p || (cl != -1 && g.cluster != cl) || !classOK(g, r) || !boundOK(r, g.shareCPU, g.shareMem) {
				continue
			}
			lvl = append(lvl, int32(gi))
		}
		slices.SortStableFunc(lvl, func(a, b int32) int {
			ac, am := waste(w.groups[a])
			bc, bm := waste(w.groups[b])
			if ac != bc {
				return cmp.Compare(ac, bc)
			}
			return cmp.Compare(am, bm)
		})
		var tiers [][]int32
		for i := 0; i < len(lvl); {
			j := i + 1
			ic, im := waste(w.groups[lvl[i]])
			for j < len(lvl) {
				if jc, jm := waste(w.groups[lvl[j]]); jc != ic || jm != im {
					break
				}
				j++
			}
			tiers = append(tiers, lvl[i:j:j])
			i = j
		}
		out.flat = append(out.flat, lvl)
		out.tiers = append(out.tiers, tiers)
	}
	if cacheable {
		w.lvlCache[k] = out
	}
	return out
}

func (w *world) selector(text string) *selector {
	if s, ok := w.sels[text]; ok {
		return &s
	}
	sel, err := labels.Parse(text)
	s := selector{text: text, sel: sel}
	if err != nil {
		s.sel = labels.Nothing() // validated at submit; never matches if not
	}
	w.sels[text] = s
	return &s
}

// matches reports whether node ni's tags match sel (cached per cycle).
func (w *world) matches(sel *selector, ni int32) bool {
	c := w.selCache[sel.text]
	if c == nil {
		c = make([]int8, len(w.nodes))
		w.selCache[sel.text] = c
	}
	switch c[ni] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := sel.sel.Matches(labels.Set(w.nodes[ni].n.Tags))
	c[ni] = 2
	if ok {
		c[ni] = 1
	}
	return ok
}

// tolerates reports whether tolerations tol tolerate every NoSchedule and
// NoExecute taint of node n (Kubernetes semantics).
func tolerates(n *structs.Node, tol []corev1.Toleration) bool { return untolerated(n, tol) == nil }

// firstTaint names node n's first taint that tol does not tolerate.
func firstTaint(n *structs.Node, tol []corev1.Toleration) string {
	if t := untolerated(n, tol); t != nil {
		return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return ""
}

// untolerated returns node n's first scheduling taint tol does not tolerate.
func untolerated(n *structs.Node, tol []corev1.Toleration) *corev1.Taint {
	for i := range n.Taints {
		t := &n.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for k := range tol {
			if tol[k].ToleratesTaint(logr.Discard(), t, true) {
				ok = true
				break
			}
		}
		if !ok {
			return t
		}
	}
	return nil
}

// affinityOK checks job affinity (share a node with a matching job) and
// anti-affinity (share none) against the tasks now on node ni.
func (w *world) affinityOK(c *jobCtx, ni int32) bool {
	for _, s := range c.away {
		for _, k := range w.nodes[ni].tasks {
			wt := &w.tasks[k]
			if !wt.off && wt.job != nil && wt.job.ID != c.j.ID && s.Matches(labels.Set(wt.job.Labels)) {
				return false
			}
		}
	}
	for _, s := range c.with {
		found := false
		for _, k := range w.nodes[ni].tasks {
			wt := &w.tasks[k]
			if !wt.off && wt.job != nil && wt.job.ID != c.j.ID && s.Matches(labels.Set(wt.job.Labels)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// alloc returns what a replica asking r is given on node ni: accelerator
// replicas get the CPU and memory bound to their accelerators.
func (w *world) alloc(ni int32, r structs.Resources) structs.Resources {
	if r.Accels == 0 {
		return r
	}
	n := &w.nodes[ni]
	out := r
	out.AccelType = n.n.Capacity.AccelType
	out.MilliCPU = r.Accels * n.shareCPU
	out.Memory = r.Accels * n.shareMem
	return out
}
