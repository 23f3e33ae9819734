package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// explain builds the why-pending reason for failure f, sharing results
// between jobs whose contexts ask the same question (whyKey).
func (w *world) explain(f failure, cache whyCache) *Why {
	j := f.j
	if len(f.preempting) > 0 || len(f.stopping) > 0 {
		names := make([]string, 0, len(f.preempting)+len(f.stopping))
		for _, p := range f.preempting {
			names = append(names, string(p.Victim))
		}
		for _, v := range f.stopping {
			names = append(names, string(v))
		}
		why := &Why{Waiting: fmt.Sprintf("waiting for %d preempted low-priority job(s) to stop: %s", len(names), strings.Join(names, ", "))}
		if f.notice.After(w.now) {
			why.Waiting += "; their preemption notice ends at " + stamp(f.notice, w.now)
		}
		why.render("does not fit now")
		return why
	}
	s, pools := j.ShapeAt(0), w.eligiblePools(j)
	key, keyed := w.whyKey(w.key[:0], w.describe(&w.ctx, f.ask, s, pools), askNow)
	w.key = key
	var base *Why
	if keyed && cache != nil {
		base = cache[string(key)]
	}
	if base == nil {
		base = w.explainNodes(w.newCtx(f.ask, s, pools, -1), false)
		prefix := "does not fit now"
		if base.NeverFits {
			prefix = "can never fit"
		}
		if by := w.reservedBy(j); by != "" && !base.NeverFits {
			base.Waiting = "nodes are reserved for " + by
		}
		base.render(prefix)
		if keyed && cache != nil {
			cache[string(key)] = base
		}
	}
	base = w.poolOnlyWhy(j, w.noNodesWhy(j, base))
	if f.protected != nil {
		why := *base
		why.Waiting = f.protected.String()
		if base.Waiting != "" {
			why.Waiting = base.Waiting + "; " + why.Waiting
		}
		why.render("does not fit now")
		return &why
	}
	if f.quota == nil {
		return base
	}
	why := *base
	why.Quota = f.quota
	why.render("waiting for quota")
	return &why
}

// poolOnlyWhy says of a normal job accepted over its public quota, and
// so run only in its project's pool, that the quota keeps it there: the
// public pool's nodes are counted as closed to it by quota, and the
// quota it is over (scope, key, in use and limit) is named as a job
// waiting for quota is told. base is shared: it is copied, not changed.
func (w *world) poolOnlyWhy(j *structs.Job, base *Why) *Why {
	if !j.PoolOnly || j.Priority != structs.PriorityNormal {
		return base
	}
	why := *base
	why.Filtered = slices.Clone(base.Filtered)
	why.Notes = slices.Clone(base.Notes)
	for i, c := range why.Filtered {
		if c.Reason == poolClosed {
			why.Filtered[i].Reason = "in the public pool, which its project's public quota keeps it from"
		}
	}
	jj := *j
	jj.Charged = nil
	s := j.ShapeAt(0) // the shape admission charged
	why.Quota = w.quotaCheck(&jj, structs.JobCharge(&jj, s, s.Replicas))
	if why.Quota == nil {
		why.Notes = append(why.Notes, "its public quota has room now, but it was accepted over it and stays in its project's pool")
	}
	prefix := "does not fit now: over public quota, so only the project's pool may be used"
	if base.NeverFits {
		prefix = "can never fit: over public quota, so only the project's pool may be used"
	}
	why.render(prefix)
	return &why
}

// noNodesWhy says of a job naming a declared cluster no node is in yet that
// it waits for nodes to join it: it does not fit now, rather than never.
// base is shared: it is copied, not changed.
func (w *world) noNodesWhy(j *structs.Job, base *Why) *Why {
	if !w.awaitsNodes(j) {
		return base
	}
	why := *base
	why.NeverFits = false
	why.Filtered = slices.Clone(base.Filtered)
	why.Notes = append(slices.Clone(base.Notes), fmt.Sprintf("cluster %s has no nodes yet: the job waits for nodes to join it (coordinator node list shows each node's cluster)", j.Cluster))
	why.render("does not fit now")
	return &why
}

// whyCache shares Why results between jobs asking the same question,
// by whyKey; nil shares nothing.
type whyCache map[string]*Why

// shareWhy is false in tests that check the key: each job is explained
// alone.
var shareWhy = true

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

// explainNodes counts, over the nodes of the clusters c's job may use,
// the first rule rejecting a replica of c on each (rules.go), and
// whether the job could ever fit. At submit only the hardware decides
// whether it could ever fit (pools, node classes, capacity, a pinned
// node): selectors, taints, affinity and readiness change, so they never
// make a job refused.
func (w *world) explainNodes(c *jobCtx, submit bool) *Why {
	j := c.j
	r := c.shape.Resources
	why := &Why{}
	if len(c.pools) == 0 {
		why.NeverFits = true
		why.Nodes = len(w.nodes)
		why.Filtered = []Count{{Reason: fmt.Sprintf("no pool: high priority runs only in its project's pool and project %q has none", j.Project), Nodes: len(w.nodes)}}
		return why
	}
	// count: the rules whose rejections are counted; ever: those that
	// keep a node from ever taking a replica.
	count, ever := mode(askNow), mode(askEver)
	if submit {
		count, ever = askSubmitCount, askSubmit
	}
	type rkey struct {
		rs     reason
		detail string
	}
	counts := map[rkey]int{}
	var order []rkey
	add := func(rs reason, ni int32, n int) {
		k := rkey{rs: rs}
		if perNode&(1<<rs) != 0 {
			k.detail = w.text(rs, c, ni)
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k] += n
	}
	need := len(w.missing(j, c.shape.Replicas))
	if !j.IsGang() {
		need = min(need, max(1, j.MinAvailable-len(w.liveOf[j.ID])))
	}
	// Replicas that fit per domain, which a placement stays within: on
	// nodes that could ever take one (apart, with spreadReplicas, and
	// were they allowed on one node: packed), and now.
	gang := j.IsGang()
	ever1, packed, now := map[domain]int{}, map[domain]int{}, map[domain]int{}
	var maxCap int64
	var qAccels, qNodes int64 // quarantined accelerators on nodes of the right class
	frag := &Fragmentation{AccelType: r.AccelType, Needed: r.Accels}
	for _, g := range w.groups {
		if rs := w.groupFails(c, g, count); rs != rOK {
			if !rules[rs].uncounted {
				why.Nodes += len(g.nodes)
				add(rs, g.nodes[0], len(g.nodes))
			}
			continue
		}
		why.Nodes += len(g.nodes)
		gd := domainOf(g, gang)
		for _, ni := range g.nodes {
			nd := &w.nodes[ni]
			d := w.domainAt(c, ni, gd)
			if q := nd.n.QuarantinedMask(); r.Accels > 0 && q != 0 {
				qAccels += popcount(q)
				qNodes++
			}
			first, failed := w.judge(c, ni, count, ever)
			if failed&ever == 0 {
				// A node not ready comes back, a quarantine is lifted by
				// an admin, replicas end: the job waits, it is not told
				// it can never fit.
				ever1[d] += w.slots(c, ni, true, true)
				packed[d] += w.packed(c, ni, true, true)
			}
			if failed&(ever|kindDown) == 0 && r.Accels > 0 {
				maxCap = max(maxCap, nd.n.Capacity.Accels)
				frag.add(nd.n.Name, popcount(nd.accels))
			}
			if first == rOK {
				why.Fit++
				now[d] += w.slots(c, ni, false, false)
				continue
			}
			if first == rCapacity && r.Accels > 0 {
				maxCap = max(maxCap, nd.n.Capacity.Accels)
			}
			add(first, ni, 1)
		}
	}
	for _, k := range order {
		text := k.detail
		if text == "" {
			text = w.text(k.rs, c, -1)
		}
		why.Filtered = append(why.Filtered, Count{Reason: text, Nodes: counts[k]})
	}
	everSlots, packedSlots, packedAll, nowSlots := 0, 0, 0, 0
	for _, v := range ever1 {
		everSlots = max(everSlots, v)
	}
	for _, v := range packed {
		packedSlots = max(packedSlots, v)
		packedAll += v
	}
	for _, v := range now {
		nowSlots = max(nowSlots, v)
	}
	// Replicas asked on distinct nodes wait for nodes to join, but for a
	// gang's: like a gang too big for any one pool, one spread over more
	// nodes than any one pool of one cluster has could never start
	// together. Otherwise only what no node could ever hold never fits.
	why.NeverFits = packedSlots < need || gang && everSlots < need
	if j.NodeName != "" && c.nodePin == -2 {
		why.NeverFits = true
		why.Notes = append(why.Notes, fmt.Sprintf("node %s does not exist", j.NodeName))
	}
	if gang && packedSlots < need && packedAll >= need && !c.required() {
		why.Notes = append(why.Notes, "a gang runs in one pool of one cluster")
	}
	if gang && !why.NeverFits && nowSlots < need && !c.required() {
		if nowAll(now) >= need {
			why.Notes = append(why.Notes, w.roomPerPool(now))
		}
	}
	if packedSlots >= need && everSlots < need {
		why.Notes = append(why.Notes, fmt.Sprintf("%d replicas need %d distinct nodes, %d eligible", need, need, everSlots))
	}
	if j.IsGang() || need > 1 {
		why.Gang = &GangShortfall{Needed: need, Fit: min(nowSlots, need), MaxFit: min(everSlots, need), Together: gang}
	}
	if c.required() {
		why.Topology = w.topologyShortfall(c, "replicas", need, now, ever1)
	}
	if !submit {
		w.explainSpark(c, why, ever1)
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

func nowAll(now map[domain]int) int {
	n := 0
	for _, v := range now {
		n += v
	}
	return n
}

// roomPerPool says that a gang stays in one pool and how many of its
// replicas fit now in each pool that has room for some, in the order of
// the groups (cluster, then pool), naming the cluster too when the pools
// are in several.
func (w *world) roomPerPool(now map[domain]int) string {
	var ds []domain
	clusters := map[int16]bool{}
	for d, v := range now {
		if v > 0 {
			ds = append(ds, d)
			clusters[d.cluster] = true
		}
	}
	slices.SortFunc(ds, func(a, b domain) int { return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.pool, b.pool)) })
	var parts []string
	for i, d := range ds {
		name := string(w.pools[d.pool].Name)
		if len(clusters) > 1 {
			name = fmt.Sprintf("%s/%s", w.clusters[d.cluster], name)
		}
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s has room for %d now", name, now[d]))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", name, now[d]))
		}
	}
	where := "one pool"
	if len(clusters) > 1 {
		where = "one pool of one cluster"
	}
	return "a gang's replicas stay in " + where + ": " + strings.Join(parts, ", ")
}
