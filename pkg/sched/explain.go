package sched

import (
	"fmt"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// explain builds the why-pending reason for failure f, sharing results
// between jobs whose placement questions are identical (cache).
func (w *world) explain(f failure, cache *whyCache) *Why {
	j := f.j
	if len(f.preempting) > 0 {
		var names []string
		for _, p := range f.preempting {
			names = append(names, string(p.Victim))
		}
		why := &Why{Waiting: fmt.Sprintf("waiting for %d preempted low-priority job(s) to stop: %s", len(names), strings.Join(names, ", "))}
		why.render("does not fit now")
		return why
	}
	key, keyed := w.explainKey(j)
	base, ok := cache.get(key, keyed)
	if !ok {
		base = w.explainNodes(j, false)
		prefix := "does not fit now"
		if base.NeverFits {
			prefix = "can never fit"
		}
		if by := w.reservedBy(j); by != "" && !base.NeverFits {
			base.Waiting = "nodes are reserved for " + by
		}
		base.render(prefix)
		cache.put(key, keyed, base)
	}
	if f.quota == nil {
		return base
	}
	why := *base
	why.Quota = f.quota
	why.render("waiting for quota")
	return &why
}

// whyKey is the placement question of a job without tolerations or
// devices; jobs asking the same question share one Why.
type whyKey struct {
	prio            structs.Priority
	project         structs.ProjectID
	poolOnly, gang  bool
	cluster         structs.ClusterID
	node            structs.NodeID
	selector        string
	replicas, min   int
	cpu, mem, accel int64
	accelType       string
	extra           string // the whole key as text when it has slices or maps
}

// whyCache shares Why results between jobs asking the same question.
type whyCache struct {
	byKey  map[whyKey]*Why
	byText map[string]*Why // keys with tolerations or devices
}

func (c *whyCache) get(k whyKey, keyed bool) (*Why, bool) {
	if !keyed {
		return nil, false
	}
	if k.extra != "" {
		w, ok := c.byText[k.extra]
		return w, ok
	}
	w, ok := c.byKey[k]
	return w, ok
}

func (c *whyCache) put(k whyKey, keyed bool, w *Why) {
	switch {
	case !keyed:
	case k.extra != "":
		c.byText[k.extra] = w
	default:
		c.byKey[k] = w
	}
}

// explainKey identifies the placement question of j; keyed is false when
// the answer depends on j itself (live replicas, reservations, affinity,
// spread, the clusters its volumes allow).
func (w *world) explainKey(j *structs.Job) (k whyKey, keyed bool) {
	if w.only != nil || len(w.liveOf[j.ID]) > 0 || len(j.Affinity.WithJobs)+len(j.Affinity.AwayFromJobs) > 0 || j.Affinity.SpreadReplicas || w.hasHolds(j.ID, "") {
		return k, false
	}
	r := j.Resources
	k = whyKey{j.Priority, j.Project, j.PoolOnly, j.IsGang(), j.Cluster, j.NodeName, j.Selector, j.Replicas, j.MinAvailable,
		r.MilliCPU, r.Memory, r.Accels, r.AccelType, ""}
	if len(j.Tolerations) > 0 || len(r.Devices) > 0 {
		k.extra = fmt.Sprintf("%v|%v|%v", k, j.Tolerations, r.Devices)
	}
	if j.Kind == structs.KindSpark && j.Spark.MinExecutors() > 0 {
		// Its executors' question too (explainSpark).
		k.extra = fmt.Sprintf("%v|%v|%v|spark %d × %v %v", k, j.Tolerations, r.Devices, j.Spark.MinExecutors(),
			j.Spark.ExecutorResources(), j.Spark.Executor.NodeSelector)
	}
	return k, true
}

// reservedBy names a job holding a reservation j is blocked behind, if any
// (room held for running spark jobs' executors is counted per node only).
func (w *world) reservedBy(j *structs.Job) string {
	for _, r := range w.holds {
		if r.Job != j.ID && r.Kind != ReserveMinExecutors {
			if rj := w.snap.Jobs[r.Job]; rj == nil || rj.Priority >= j.Priority {
				return string(r.Job)
			}
		}
	}
	return ""
}

// explainNodes counts, over the nodes of j's clusters, why each rejects a
// replica of j's own shape, and whether j could ever fit.
// With hw set only hardware counts (pools, node classes, capacity, a pinned
// node): selectors, taints, affinity and readiness can change, so they never
// make a job refused at submit (C02, C26).
func (w *world) explainNodes(j *structs.Job, hw bool) *Why {
	s := j.ShapeAt(0)
	r := s.Resources
	pools := w.eligiblePools(j)
	why := &Why{}
	if len(pools) == 0 {
		why.NeverFits = true
		why.Nodes = len(w.nodes)
		why.Filtered = []Count{{Reason: fmt.Sprintf("no pool: high priority runs only in its project's pool and project %q has none", j.Project), Nodes: len(w.nodes)}}
		return why
	}
	inPool := map[int16]bool{}
	for _, p := range pools {
		inPool[p] = true
	}
	c := w.newCtx(j, s, pools, -1)
	type rkey struct {
		rs     reason
		detail string
	}
	counts := map[rkey]int{}
	var order []rkey
	need := len(w.missing(j, s.Replicas))
	if !j.IsGang() {
		need = min(need, max(1, j.MinAvailable-len(w.liveOf[j.ID])))
	}
	// Replicas that fit, per place a placement must stay within: a gang
	// stays in one pool of one cluster, other jobs in one cluster.
	ever, now := map[cpool]int{}, map[cpool]int{}
	gang := j.IsGang()
	placeOf := func(g *group) cpool {
		if gang {
			return cpool{g.cluster, g.pool}
		}
		return cpool{g.cluster, -1}
	}
	var maxCap int64
	var qAccels, qNodes int64 // quarantined accelerators on nodes of the right class
	frag := &Fragmentation{AccelType: r.AccelType, Needed: r.Accels}
	add := func(k rkey, n int) {
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k] += n
	}
	for _, g := range w.groups {
		if j.Cluster != "" && w.clusters[g.cluster] != j.Cluster {
			continue
		}
		why.Nodes += len(g.nodes)
		if !w.hasCache(j, g.cluster) {
			add(rkey{rs: rNoCache}, len(g.nodes))
			continue
		}
		if w.only != nil && !w.only[g.cluster] {
			add(rkey{rs: rVolume}, len(g.nodes))
			continue
		}
		// Whole groups are rejected at once by pool and node class.
		switch {
		case g.pool < 0 || !inPool[g.pool]:
			add(rkey{rs: rPool}, len(g.nodes))
			continue
		case !classOK(g, r):
			add(rkey{rs: rClass, detail: w.reasonText(rClass, c, g.nodes[0])}, len(g.nodes))
			continue
		}
		for _, ni := range g.nodes {
			nd := &w.nodes[ni]
			if q := nd.n.QuarantinedMask(); r.Accels > 0 && q != 0 {
				qAccels += popcount(q)
				qNodes++
			}
			rs := w.nodeCheck(c, ni)
			if hw && rs != rNodeName {
				rs = rOK
			}
			if rs == rNotReady {
				// A node not ready (its kubelet or agent silent, or
				// draining) comes back: a job that would fit there waits,
				// it is not told it can never fit.
				rr := w.nodeCheckReady(c, ni)
				if rc := w.capacityCheck(ni, r); (rr == rOK || rr == rSpread) && (rc == rOK || rc == rBadAccel) {
					ever[placeOf(g)] += w.slots(c, ni, true, true)
				}
			}
			quarantined := false // fits once quarantined accelerators return
			if rs == rOK || rs == rSpread {
				switch rc := w.capacityCheck(ni, r); rc {
				case rOK:
				case rBadAccel:
					quarantined = true
				default:
					rs = rc
				}
			}
			if rs == rOK || rs == rSpread {
				// A quarantine is lifted by an admin: it makes a job wait,
				// never "can never fit".
				ever[placeOf(g)] += w.slots(c, ni, true, true)
				if r.Accels > 0 {
					maxCap = max(maxCap, nd.n.Capacity.Accels)
					if free := popcount(nd.accels); free > 0 {
						frag.Nodes++
						frag.MaxFree = max(frag.MaxFree, free)
						frag.TotalFree += free
					}
				}
			}
			if rs == rOK && quarantined {
				rs = rBadAccel
			}
			if rs == rOK {
				rs = w.freeCheck(ni, w.alloc(ni, r), j.ID, j.Priority)
				if rs == rOK {
					why.Fit++
					now[placeOf(g)] += w.slots(c, ni, false, false)
					continue
				}
			}
			if rs == rCapacity && r.Accels > 0 {
				maxCap = max(maxCap, nd.n.Capacity.Accels)
			}
			k := rkey{rs: rs}
			switch rs {
			case rTaint:
				k.detail = firstTaint(nd.n, j.Tolerations)
			case rReserved:
				_, _, _, by := w.held(ni, j.ID, j.Priority)
				k.detail = string(by)
			case rBound:
				k.detail = w.reasonText(rs, c, ni)
			}
			add(k, 1)
		}
	}
	for _, k := range order {
		text := k.detail
		switch k.rs {
		case rTaint:
			text = "with untolerated taint " + k.detail
		case rReserved:
			text = "reserved for job " + k.detail
		case rClass, rBound:
		default:
			text = w.reasonText(k.rs, c, -1)
		}
		why.Filtered = append(why.Filtered, Count{Reason: text, Nodes: counts[k]})
	}
	everSlots, nowSlots, everAll := 0, 0, 0
	for _, v := range ever {
		everSlots = max(everSlots, v)
		everAll += v
	}
	for _, v := range now {
		nowSlots = max(nowSlots, v)
	}
	why.NeverFits = everSlots < need
	if j.NodeName != "" && c.nodePin == -2 {
		why.NeverFits = true
		why.Notes = append(why.Notes, fmt.Sprintf("node %s does not exist", j.NodeName))
	}
	if gang && everSlots < need && everAll >= need {
		why.Notes = append(why.Notes, "a gang runs in one pool of one cluster")
	}
	if j.IsGang() || need > 1 {
		why.Gang = &GangShortfall{Needed: need, Fit: min(nowSlots, need), MaxFit: min(everSlots, need), Together: gang}
	}
	if !hw {
		w.explainSpark(j, why, pools, ever)
	}
	if r.Accels > 0 && !why.NeverFits && frag.MaxFree < r.Accels && frag.TotalFree >= r.Accels*int64(need) {
		if frag.AccelType == "" {
			frag.AccelType = "accelerators"
		}
		why.Fragmentation = frag
	}
	if qAccels > 0 {
		what := r.AccelType
		if what == "" {
			what = "matching"
		}
		why.Notes = append(why.Notes, fmt.Sprintf("%d %s accelerators on %d node(s) are quarantined after failed preflights (an admin returns them with coordinator node release)", qAccels, what, qNodes))
	}
	if why.NeverFits && r.Accels > 0 && maxCap > 0 && maxCap < r.Accels {
		why.Notes = append(why.Notes, fmt.Sprintf("at most %d accelerators on one node, %d asked per replica", maxCap, r.Accels))
	}
	return why
}

// reasonText describes rejection reason rs of node ni for people.
func (w *world) reasonText(rs reason, c *jobCtx, ni int32) string {
	r := c.shape.Resources
	var nd *wnode // only for the reasons that name node details
	if ni >= 0 {
		nd = &w.nodes[ni]
	}
	switch rs {
	case rPool:
		return "in pools this job may not use"
	case rCluster:
		return "in other clusters"
	case rNoCache:
		return "in clusters without a dataset cache (no redis in their cluster config)"
	case rVolume:
		return "in clusters without its volumes, or where another job mounts them"
	case rNotReady:
		return "not ready"
	case rNodeName:
		return "not node " + string(c.j.NodeName)
	case rClass:
		switch {
		case r.Accels > 0 && r.AccelType != "" && nd.n.Capacity.Accels > 0:
			return "with no " + r.AccelType + " accelerators"
		case r.Accels > 0 && r.AccelType != "":
			return "with no " + r.AccelType + " accelerators (CPU nodes)"
		case r.Accels > 0:
			return "with no accelerators"
		case len(r.Devices) > 0:
			return "with no edge devices"
		}
		return "with accelerators (CPU-only jobs run on CPU nodes)"
	case rSelector:
		return "not matching selector " + c.j.Selector
	case rAffinity:
		return "failing job affinity"
	case rCapacity:
		return "too small for one replica (" + r.String() + ")"
	case rBadAccel:
		return "with too few accelerators out of quarantine"
	case rBound:
		return fmt.Sprintf("binding %s CPU and %s memory per accelerator, less than asked", structs.FormatMilliCPU(nd.shareCPU), structs.FormatBytes(nd.shareMem))
	case rSpread:
		return "already running a replica (spreadReplicas)"
	case rFree:
		return "without enough free resources now"
	}
	return "rejected"
}
