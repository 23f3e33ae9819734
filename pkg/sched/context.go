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

// reason is why a node was rejected for a replica; the first failing check
// in this order is the one counted.
type reason uint8

const (
	rOK       reason = iota
	rPool            // node's pool is not one the job may use
	rCluster         // job pinned to another cluster
	rNoCache         // the job mounts the dataset cache; the node's cluster has none
	rVolume          // the node's cluster lacks the job's volumes, or they are in use there
	rNotReady        // node not ready, draining or quarantined
	rNodeName        // job pinned to another node
	rClass           // wrong kind of node: accelerator type, CPU-only vs accelerator, devices
	rTaint           // an untolerated taint
	rSelector        // tags do not match the selector
	rAffinity        // job affinity or anti-affinity
	rCapacity        // the node can never hold one replica
	rBound           // request above the CPU/memory bound to the accelerators
	rBadAccel        // would hold one replica, but too many of its accelerators are quarantined
	rSpread          // already holds a replica of this job (spreadReplicas)
	rReserved        // free resources are reserved for another job
	rFree            // not enough free now
	nReasons
)

// jobCtx is what the placement of one job's shape needs, computed once.
type jobCtx struct {
	j       *structs.Job
	shape   structs.Shape
	levels  [][]int32   // group indices per pool preference level
	tiers   [][][]int32 // per level: groups of equal bound-resource waste, least first
	pools   []int16     // the pool of each level
	nodePin int32       // -1 none; -2 pinned to an unknown node
	sel     *selector
	with    []labels.Selector
	away    []labels.Selector
	used    []int32 // nodes holding replicas of this job (spread)
	// quota: when placing in the public pool a normal job must be charged.
	needCharge bool
	// exec, for a spark job placed with its minimum executors, is the
	// context of one executor and execN how many (see newCtx); nil: none.
	exec  *jobCtx
	execN int
}

// newCtx builds the context for placing shape s of job j. pools lists the
// pool indices the job may use, in preference order.
// Only nodes of cluster cl are considered (-1: every cluster).
// The context is the world's scratch one: valid until the next newCtx.
// For a spark job whose driver comes with its minimum executors in cl
// (sparkGang), exec is the context of one of those executors (the
// world's second scratch one) and execN how many.
func (w *world) newCtx(j *structs.Job, s structs.Shape, pools []int16, cl int16) *jobCtx {
	c := w.initCtx(&w.ctx, j, s, pools, cl)
	if n := w.sparkGang(j, cl); n > 0 {
		ej := w.executorJob(j)
		c.exec = w.initCtx(&w.ectx, ej, structs.Shape{Replicas: 1, Resources: ej.Resources}, pools, cl)
		c.execN = n
	}
	return c
}

// initCtx fills c for placing shape s of job j (see newCtx) and returns it.
func (w *world) initCtx(c *jobCtx, j *structs.Job, s structs.Shape, pools []int16, cl int16) *jobCtx {
	lv := w.levels(pools, cl, s.Resources)
	*c = jobCtx{j: j, shape: s, nodePin: -1, pools: pools, levels: lv.flat, tiers: lv.tiers,
		with: c.with[:0], away: c.away[:0], used: c.used[:0]}
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
			if g.pool != p || (cl != -1 && g.cluster != cl) || !classOK(g, r) {
				continue
			}
			if wc, wm := waste(g); wc < 0 || wm < 0 {
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

// classOK reports whether nodes of group g can serve replicas asking r:
// accelerator replicas need that type (or any type), device replicas need
// device nodes, CPU-only replicas stay on CPU nodes so GPUs are not stranded.
func classOK(g *group, r structs.Resources) bool {
	switch {
	case r.Accels > 0:
		return g.accel && (r.AccelType == "" || r.AccelType == g.class)
	case len(r.Devices) > 0:
		return g.class == deviceClass
	default:
		return !g.accel && g.class != deviceClass
	}
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

// nodeCheck runs the node-level static checks (everything but resources).
func (w *world) nodeCheck(c *jobCtx, ni int32) reason {
	if !w.nodes[ni].ready {
		return rNotReady
	}
	return w.nodeCheckReady(c, ni)
}

// nodeCheckReady is nodeCheck as if node ni were ready.
func (w *world) nodeCheckReady(c *jobCtx, ni int32) reason {
	n := &w.nodes[ni]
	if c.nodePin != -1 && c.nodePin != ni {
		return rNodeName
	}
	if n.tainted && !tolerates(n.n, c.j.Tolerations) {
		return rTaint
	}
	if c.sel != nil && !w.matches(c.sel, ni) {
		return rSelector
	}
	if (len(c.with) > 0 || len(c.away) > 0) && !w.affinityOK(c, ni) {
		return rAffinity
	}
	for _, u := range c.used {
		if u == ni {
			return rSpread
		}
	}
	return rOK
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

// capacityCheck reports whether node ni could ever hold one replica
// asking r (on an empty node), and whether the request respects the bound;
// rBadAccel when it could once its quarantined accelerators return.
func (w *world) capacityCheck(ni int32, r structs.Resources) reason {
	n := &w.nodes[ni]
	capa := n.n.Capacity
	if r.Accels > 0 {
		if r.Accels > capa.Accels {
			return rCapacity
		}
		if r.MilliCPU > r.Accels*n.shareCPU || r.Memory > r.Accels*n.shareMem {
			return rBound
		}
		if r.Accels > n.healthy {
			return rBadAccel // until an admin releases them
		}
		return rOK
	}
	if r.MilliCPU > capa.MilliCPU || r.Memory > capa.Memory {
		return rCapacity
	}
	for d, c := range r.Devices {
		if capa.Devices[d] < c {
			return rCapacity
		}
	}
	return rOK
}

// freeCheck reports whether node ni has room now for alloc a of job j
// (priority p), counting reservations held for others.
func (w *world) freeCheck(ni int32, a structs.Resources, j structs.JobID, p structs.Priority) reason {
	n := &w.nodes[ni]
	if popcount(n.accels) < a.Accels || n.freeCPU < a.MilliCPU || n.freeMem < a.Memory {
		return rFree
	}
	for d, c := range a.Devices {
		if n.devices[d] < c {
			return rFree
		}
	}
	if len(n.holds) > 0 {
		hc, hm, ha, _ := w.held(ni, j, p)
		if popcount(n.accels)-ha < a.Accels || n.freeCPU-hc < a.MilliCPU || n.freeMem-hm < a.Memory {
			return rReserved
		}
	}
	return rOK
}
