package sched

import (
	"math/bits"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// The placement rules, each once. A rule rejects nodes for one replica of
// a job (its context, jobCtx) and says why (a reason). Every question
// asked of nodes walks the same rules, in the order of the reasons below,
// and differs only in which kinds of rule it asks (a mode):
//
//	placement (findNode)                may a replica go there now?        askNow
//	preemption, gang reservations       would it, were the room free?      askRoom
//	explanation (explainNodes)          which rule rejects it first?       askNow
//	                                    could it ever take one?            askEver
//	admission (Admit)                   could it ever, by its hardware?    askSubmit
//	commit re-check (CheckPlacement)    the node rules a plan can break: readiness,
//	                                    accelerators free and healthy, room
//
// A new rule is one reason constant (its place in the order), one entry in
// rules (kind, inputs it reads, text) and one case in the check of its
// scope (clusterFails, groupFails or nodeFails). Placement, explanation,
// preemption, reservations and the why cache key (whyKey) then all use it.

// reason is a rule, named by what it rejects; rOK is no rejection. The
// first rule in this order that rejects a node is the one counted.
type reason uint8

const (
	rOK reason = iota
	// Cluster scope: decided for every node of a cluster at once.
	rCluster // job pinned to another cluster
	rNoCache // the job mounts the dataset cache; the cluster has none
	rVolume  // the cluster lacks the job's volumes, or they are in use there
	rLevel   // the cluster has no topology level the job requires
	// Group scope: decided for every node of a group (one pool, one node class).
	rPool  // node's pool is not one the job may use
	rClass // wrong kind of node: accelerator type, CPU-only vs accelerator, devices
	// Node scope.
	rNotReady // node not ready, draining or quarantined
	rNodeName // job pinned to another node
	rDomain   // in no domain of the level the job requires, or outside the one it is held to
	rTaint    // an untolerated taint
	rSelector // tags do not match the selector
	rAffinity // job affinity or anti-affinity
	rCapacity // the node can never hold one replica
	rBound    // request above the CPU/memory bound to the accelerators
	rSpread   // already holds a replica of this job (spreadReplicas)
	rBadAccel // would hold one replica, but too many of its accelerators are quarantined
	rFree     // not enough free now
	rReserved // free resources are reserved for another job
	nReasons
)

// kind says how long a rule's rejection lasts, which decides the
// questions (modes) that ask it.
type kind uint8

const (
	kindHardware   kind = 1 << iota // pools, node classes, capacity, a pinned node or cluster: asked at submit
	kindConfig                      // tags, taints, caches, volumes, other jobs: change with the cluster
	kindDown                        // the node is not ready: it comes back
	kindQuarantine                  // accelerators quarantined: an admin returns them
	kindOwn                         // the job's own replicas on the node (spreadReplicas)
	kindUse                         // what is free now, and reserved for others
)

// mode is a question asked of nodes: the kinds of rule it checks.
type mode = kind

const (
	askNow    = kindHardware | kindConfig | kindDown | kindQuarantine | kindOwn | kindUse
	askRoom   = askNow &^ kindUse         // were the room free (victims gone, an empty node)
	askEver   = kindHardware | kindConfig // could the node ever take one, as the cluster is configured
	askSubmit = kindHardware              // at submit: tags, taints and readiness change
	// askSubmitCount is what explanations count at submit: the hardware,
	// and the room on nodes as they are (none of them runs anything).
	askSubmitCount = askNow &^ (kindConfig | kindDown | kindOwn)
)

type scope uint8

const (
	scopeCluster scope = iota
	scopeGroup
	scopeNode
)

// rule describes one reason's rule; its check is in clusterFails,
// groupFails or nodeFails.
type rule struct {
	kind  kind
	scope scope
	// applies reports whether the rule can reject anything for c (nil:
	// always). A rule that does not apply is neither checked nor keyed.
	applies func(c *jobCtx) bool
	// reads is what of the job the rule reads: whyKey encodes it.
	reads input
	// uncounted rules leave their nodes out of an explanation altogether
	// (a job pinned to a cluster is told about that cluster only).
	uncounted bool
}

var rules = [nReasons]rule{
	rCluster:  {kind: kindHardware, scope: scopeCluster, applies: func(c *jobCtx) bool { return c.j.Cluster != "" }, reads: inCluster, uncounted: true},
	rNoCache:  {kind: kindConfig, scope: scopeCluster, applies: func(c *jobCtx) bool { return c.j.CacheMountPath != "" }, reads: inCache},
	rVolume:   {kind: kindConfig, scope: scopeCluster, applies: func(c *jobCtx) bool { return c.only != nil }, reads: inOnly},
	rLevel:    {kind: kindHardware, scope: scopeCluster, applies: requiresLevel, reads: inTopology},
	rPool:     {kind: kindHardware, scope: scopeGroup, reads: inPools},
	rClass:    {kind: kindHardware, scope: scopeGroup, reads: inResources},
	rNotReady: {kind: kindDown, scope: scopeNode},
	rNodeName: {kind: kindHardware, scope: scopeNode, applies: func(c *jobCtx) bool { return c.nodePin != -1 }, reads: inNode},
	rDomain:   {kind: kindHardware, scope: scopeNode, applies: func(c *jobCtx) bool { return c.required() || c.dom >= 0 }, reads: inTopology},
	rTaint:    {kind: kindConfig, scope: scopeNode, reads: inTolerations},
	rSelector: {kind: kindConfig, scope: scopeNode, applies: func(c *jobCtx) bool { return c.sel != nil }, reads: inSelector},
	rAffinity: {kind: kindConfig, scope: scopeNode, applies: func(c *jobCtx) bool { return len(c.with)+len(c.away) > 0 }, reads: inOwn},
	rCapacity: {kind: kindHardware, scope: scopeNode, reads: inResources},
	rBound:    {kind: kindHardware, scope: scopeNode, applies: accelerated, reads: inResources},
	rSpread:   {kind: kindOwn, scope: scopeNode, applies: func(c *jobCtx) bool { return c.j.Affinity.SpreadReplicas }, reads: inLive},
	rBadAccel: {kind: kindQuarantine, scope: scopeNode, applies: accelerated, reads: inResources},
	rFree:     {kind: kindUse, scope: scopeNode, reads: inResources},
	rReserved: {kind: kindUse, scope: scopeNode, reads: inPriority | inHolds},
}

func accelerated(c *jobCtx) bool { return c.shape.Resources.Accels > 0 }

func requiresLevel(c *jobCtx) bool { return c.j.Topology != nil && c.j.Topology.Required != "" }

// ruleSet is a set of reasons (bit r for reason r), walked in order.
type ruleSet uint32

// modeRules[m] is the set of rules mode m asks.
var modeRules = func() (out [askNow + 1]ruleSet) {
	for m := range out {
		for r := rOK + 1; r < nReasons; r++ {
			if rules[r].kind&mode(m) != 0 {
				out[m] |= 1 << r
			}
		}
	}
	return out
}()

var scopeRules = func() (out [scopeNode + 1]ruleSet) {
	for r := rOK + 1; r < nReasons; r++ {
		out[rules[r].scope] |= 1 << r
	}
	return out
}()

// applying is the set of rules that apply to c.
func applying(c *jobCtx) ruleSet {
	var s ruleSet
	for r := rOK + 1; r < nReasons; r++ {
		if a := rules[r].applies; a == nil || a(c) {
			s |= 1 << r
		}
	}
	return s
}

// next pops the first reason of *s.
func (s *ruleSet) next() reason {
	r := reason(bits.TrailingZeros32(uint32(*s)))
	*s &= *s - 1
	return r
}

// clusterFails returns the first cluster rule of mode m rejecting cluster
// cl for c.
func (w *world) clusterFails(c *jobCtx, cl int16, m mode) reason {
	for s := c.rules & modeRules[m] & scopeRules[scopeCluster]; s != 0; {
		r := s.next()
		var fail bool
		switch r {
		case rCluster:
			fail = w.clusters[cl] != c.j.Cluster
		case rNoCache:
			fail = !w.hasCache(c.j, cl)
		case rVolume:
			fail = !c.only[cl]
		case rLevel:
			fail = w.levelsOf(c.j.Topology.Required)[cl] < 0
		}
		if fail {
			return r
		}
	}
	return rOK
}

// groupFails returns the first cluster or group rule of mode m rejecting
// every node of group g for c.
func (w *world) groupFails(c *jobCtx, g *group, m mode) reason {
	if r := w.clusterFails(c, g.cluster, m); r != rOK {
		return r
	}
	for s := c.rules & modeRules[m] & scopeRules[scopeGroup]; s != 0; {
		r := s.next()
		var fail bool
		switch r {
		case rPool:
			fail = g.pool < 0 || !slices.Contains(c.pools, g.pool)
		case rClass:
			fail = !classOK(g, c.shape.Resources)
		}
		if fail {
			return r
		}
	}
	return rOK
}

// fails returns the first node rule of mode m rejecting node ni for one
// replica of c. Cluster and group rules are not asked: placement walks
// only the groups that pass them (clusterOrder, levels).
func (w *world) fails(c *jobCtx, ni int32, m mode) reason {
	n := &w.nodes[ni]
	for s := c.rules & modeRules[m] & scopeRules[scopeNode]; s != 0; {
		if r := s.next(); w.nodeFails(r, c, ni, n) {
			return r
		}
	}
	return rOK
}

// judge walks the node rules of mode count for node ni: the first that
// rejects it (rOK: none), and the kinds of the rules that do, as far as
// explanations need them: whether one of mode ever rejects it (then the
// walk stops), else whether the node is down.
func (w *world) judge(c *jobCtx, ni int32, count, ever mode) (first reason, failed kind) {
	n := &w.nodes[ni]
	for s := c.rules & modeRules[count] & scopeRules[scopeNode]; s != 0; {
		r := s.next()
		k := rules[r].kind
		if first != rOK && k&(ever|kindDown) == 0 {
			continue
		}
		if w.nodeFails(r, c, ni, n) {
			if first == rOK {
				first = r
			}
			if failed |= k; k&ever != 0 {
				break
			}
		}
	}
	return first, failed
}

// nodeFails is the check of node rule r for one replica of c on node ni
// (n).
func (w *world) nodeFails(r reason, c *jobCtx, ni int32, n *wnode) bool {
	res := &c.shape.Resources
	switch r {
	case rNotReady:
		return !n.ready
	case rNodeName:
		return c.nodePin != ni
	case rDomain:
		return !w.inDomain(c, n)
	case rTaint:
		return n.tainted && !tolerates(n.n, c.j.Tolerations)
	case rSelector:
		return !w.matches(c.sel, ni)
	case rAffinity:
		return !w.affinityOK(c, ni)
	case rCapacity:
		capa := &n.n.Capacity
		if res.Accels > 0 {
			return res.Accels > capa.Accels
		}
		if res.MilliCPU > capa.MilliCPU || res.Memory > capa.Memory {
			return true
		}
		for d, k := range res.Devices {
			if capa.Devices[d] < k {
				return true
			}
		}
		return false
	case rBound:
		return !boundOK(*res, n.shareCPU, n.shareMem)
	case rSpread:
		return slices.Contains(c.used, ni)
	case rBadAccel:
		return res.Accels > n.healthy // until an admin releases them
	case rFree:
		cpu, mem := res.MilliCPU, res.Memory
		if res.Accels > 0 {
			cpu, mem = res.Accels*n.shareCPU, res.Accels*n.shareMem // alloc
			if popcount(n.accels) < res.Accels {
				return true
			}
		}
		if n.freeCPU < cpu || n.freeMem < mem {
			return true
		}
		for d, k := range res.Devices {
			if n.devices[d] < k {
				return true
			}
		}
		return false
	case rReserved:
		if len(n.holds) == 0 {
			return false
		}
		a := w.alloc(ni, *res)
		hc, hm, ha, _ := w.held(c, ni)
		return popcount(n.accels)-ha < a.Accels || n.freeCPU-hc < a.MilliCPU || n.freeMem-hm < a.Memory
	}
	return false
}

// boundOK reports whether a replica asking r respects the CPU and memory
// bound to its accelerators (shareCPU, shareMem each); CPU-only replicas
// always do.
func boundOK(r structs.Resources, shareCPU, shareMem int64) bool {
	return r.Accels == 0 || (r.MilliCPU <= r.Accels*shareCPU && r.Memory <= r.Accels*shareMem)
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

// hasCache reports whether cluster c may take job j: j mounts no dataset
// cache, or the leader did not look (Snapshot.Cache nil), or c has one.
func (w *world) hasCache(j *structs.Job, c int16) bool {
	if j.CacheMountPath == "" || w.snap.Cache == nil {
		return true
	}
	_, ok := w.snap.Cache[w.clusters[c]]
	return ok
}

// poolClosed is rule rPool's text.
const poolClosed = "in pools this job may not use"

// perNode marks the rules whose text names something of the node (a
// taint, a reservation's job, a binding): explanations count their nodes
// per text.
const perNode = ruleSet(1<<rClass | 1<<rTaint | 1<<rBound | 1<<rReserved)

// text says for people why rule r rejects node ni (-1 when the text names
// nothing of the node: r is not in perNode) for one replica of c.
func (w *world) text(r reason, c *jobCtx, ni int32) string {
	res := c.shape.Resources
	switch r {
	case rPool:
		return poolClosed
	case rCluster:
		return "in other clusters"
	case rNoCache:
		return "in clusters without a dataset cache (no redis in their cluster config)"
	case rVolume:
		return "in clusters without its volumes, or where another job mounts them"
	case rLevel:
		return "in clusters without topology level " + c.j.Topology.Required
	case rNotReady:
		return "not ready"
	case rNodeName:
		return "not node " + string(c.j.NodeName)
	case rDomain:
		if c.dom >= 0 {
			return "outside " + w.domainName(c.dom)
		}
		l := structs.LevelName(c.topo.Required)
		return "in no " + l + " (without its label)"
	case rClass:
		switch {
		case res.Accels > 0 && res.AccelType != "" && w.nodes[ni].n.Capacity.Accels > 0:
			return "with no " + res.AccelType + " accelerators"
		case res.Accels > 0 && res.AccelType != "":
			return "with no " + res.AccelType + " accelerators (CPU nodes)"
		case res.Accels > 0:
			return "with no accelerators"
		case len(res.Devices) > 0:
			return "with no edge devices"
		}
		return "with accelerators (CPU-only jobs run on CPU nodes)"
	case rTaint:
		return "with untolerated taint " + firstTaint(w.nodes[ni].n, c.j.Tolerations)
	case rSelector:
		return "not matching selector " + c.j.Selector
	case rAffinity:
		return "failing job affinity"
	case rCapacity:
		return "too small for one " + c.noun() + " (" + res.String() + ")"
	case rBadAccel:
		return "with too few accelerators out of quarantine"
	case rBound:
		nd := &w.nodes[ni]
		return "binding " + structs.FormatMilliCPU(nd.shareCPU) + " CPU and " + structs.FormatBytes(nd.shareMem) + " memory per accelerator, less than asked"
	case rSpread:
		return "already running a replica (spreadReplicas)"
	case rFree:
		return "without enough free resources now"
	case rReserved:
		_, _, _, by := w.held(c, ni)
		return "reserved for job " + string(by)
	}
	return "rejected"
}
