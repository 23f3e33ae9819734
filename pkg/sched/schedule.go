package sched

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Schedule decides one scheduling cycle. It reads snap and in only.
//
// The cycle:
//  1. keep the reservations of jobs that are still pending, those of
//     executor Pods of running jobs not placed yet (ReserveExecutor), and
//     the room held for running spark jobs' minimum executors
//     (ReserveMinExecutors);
//  2. order pending jobs: priority, then longest pending, then ID;
//  3. for each job: end it if past its pendingTimeout; else try its shapes
//     (the fallbacks too once downgradeAfter has passed) on each cluster
//     and pool it may use, all replicas of a gang at once (a spark driver
//     with its minimum executors: spark_gang.go);
//  4. if a non-low job did not fit, look for low jobs whose eviction makes
//     it fit, and reserve what they free for it;
//  5. if a gang still waits and its pool has no gang reservation, reserve
//     nodes for it so smaller jobs behind it cannot starve it (backfill
//     uses everything else);
//  6. explain every job left pending.
func Schedule(snap *Snapshot, in Input) *Plan {
	w := newWorld(snap)
	w.now, w.wholeServices, w.resourcesFirst = in.Now, in.WholeServices, in.ResourcesBeforeWork
	plan := &Plan{Index: snap.Index, Pending: make(map[structs.JobID]*Why, len(in.Pending)/2)}

	// 1. Reservations survive while their job is pending and the node ready.
	pending := make(map[structs.JobID]bool, len(in.Pending))
	for _, j := range in.Pending {
		pending[j.ID] = true
	}
	// A preemption reservation lives while its victims stop, and one cycle
	// more so the preemptor can take the room; then, if the room went to
	// someone else, it is dropped and the preemptor may preempt again.
	stopping := map[structs.NodeID]bool{}
	for _, t := range snap.Tasks {
		if t.State == structs.TaskStopping {
			stopping[t.Node] = true
		}
	}
	victimsLeft := map[structs.JobID]bool{}
	gangHeld := map[int16]structs.JobID{}
	waiting := executorsWaiting(snap)
	for _, r := range snap.Reservations {
		ni, ok := w.byName[r.Node]
		if !ok || !w.nodes[ni].ready {
			continue
		}
		switch r.Kind {
		case ReserveExecutor:
			// An executor's lives while its job runs and it is not placed.
			if !waiting[execKey{r.Job, r.Executor}] {
				continue
			}
		case ReserveMinExecutors:
			// Room for a spark job's minimum executors lives while the
			// job runs and is not being stopped (the state drops each as
			// an executor binds into it).
			if !w.heldLives(r) {
				continue
			}
		default:
			if !pending[r.Job] {
				continue
			}
		}
		w.hold(r)
		if r.Kind == ReserveGang {
			gangHeld[w.nodes[ni].pool] = r.Job
		}
		if r.Kind == ReservePreemption && stopping[r.Node] {
			victimsLeft[r.Job] = true
		}
	}
	expiring := map[structs.JobID]bool{}
	for _, r := range w.holds {
		if r.Kind == ReservePreemption && !victimsLeft[r.Job] {
			expiring[r.Job] = true
		}
	}

	// 2. Order (each job once; malformed jobs are explained, not placed).
	jobs := make([]*structs.Job, 0, len(in.Pending))
	seen := make(map[structs.JobID]bool, len(in.Pending))
	for _, j := range in.Pending {
		if seen[j.ID] {
			continue
		}
		seen[j.ID] = true
		if msg := malformed(j); msg != "" {
			plan.Pending[j.ID] = &Why{NeverFits: true, Message: "can never fit; " + msg}
			continue
		}
		jobs = append(jobs, j)
	}
	order(jobs, snap.FairShare, in.Now)

	failed := make([]failure, 0, len(jobs)/2)
	var timedOut []failure // one per plan.Timeouts, in order
	vols := newVolumeUse(w)
	for _, j := range jobs {
		a := ask{j: j}
		// 3. Timeout, then placement.
		if j.State == structs.JobPending && !in.Now.Before(pendingSince(j).Add(j.Timeout())) {
			plan.Timeouts = append(plan.Timeouts, Timeout{Job: j.ID, Reason: structs.ReasonPendingTimeout})
			timedOut = append(timedOut, failure{ask: a})
			w.dropHolds(j.ID)
			continue
		}
		if w.victim[j.ID] {
			// Being stopped (preempted now or earlier): it is requeued
			// once its tasks have stopped, not topped up.
			continue
		}
		if n := len(w.stoppingOf[j.ID]); n > 0 && len(w.missing(j, j.ShapeAt(j.Shape).Replicas)) == 0 {
			// A service that lost replicas to a preemptor: they are
			// placed again once stopped (what they free is the
			// preemptor's).
			why := &Why{Waiting: fmt.Sprintf("waiting for %d preempted %s to stop before placing %s again", n, plural(n, "replica", "replicas"), plural(n, "it", "them"))}
			why.render("")
			plan.Pending[j.ID] = why
			if in.OnDecision != nil {
				in.OnDecision(j.ID, false)
			}
			continue
		}
		if in.Now.Before(j.BackoffUntil) {
			plan.Pending[j.ID] = &Why{Message: backoffWhy(j, in.Now)}
			if in.OnDecision != nil {
				in.OnDecision(j.ID, false)
			}
			continue
		}
		if len(j.Volumes) > 0 {
			// Only clusters holding its claims, where no job mounts them
			// in its way; low jobs in the way of a higher one are evicted.
			vp := w.volumePlaces(j, vols)
			if vp.wait != "" {
				if pre := w.preemptForVolumes(j, vp); len(pre) > 0 {
					plan.Preemptions = append(plan.Preemptions, pre...)
					failed = append(failed, failure{ask: a, preempting: pre})
				} else {
					plan.Pending[j.ID] = &Why{Message: vp.wait, NeverFits: vp.never}
				}
				if in.OnDecision != nil {
					in.OnDecision(j.ID, false)
				}
				continue
			}
			a.only = vp.free
		}
		pools := w.eligiblePools(j)
		canPreempt := j.Priority > structs.PriorityLow && w.lowTasks > 0 && !w.hasHolds(j.ID, ReservePreemption)
		var pl *Placement
		var f failure
		if len(pools) > 1 && j.Project != "" && canPreempt {
			// 3a. A project job takes its own pool back from low borrowers
			// before it spends public quota.
			own := pools[:1]
			if pl, f = w.tryJob(a, in.Now, own); pl == nil && f.quota == nil {
				if pre, _ := w.preempt(a, own, nil); len(pre) > 0 {
					plan.Preemptions = append(plan.Preemptions, pre...)
					f.preempting = pre
					failed = append(failed, f)
					if in.OnDecision != nil {
						in.OnDecision(j.ID, false)
					}
					continue
				}
			}
		}
		if pl == nil {
			pl, f = w.tryJob(a, in.Now, pools)
		}
		if pl != nil {
			if len(pl.Tasks) > 0 {
				plan.Placements = append(plan.Placements, *pl)
				if len(j.Volumes) > 0 {
					vols.add(j, w.nodes[w.byName[pl.Tasks[0].Node]].n.Cluster)
				}
			}
			w.dropHolds(j.ID)
			if in.OnDecision != nil {
				in.OnDecision(j.ID, true)
			}
			continue
		}
		// 4. Preemption.
		if canPreempt && f.quota == nil {
			pre, prot := w.preempt(a, pools, nil)
			plan.Preemptions = append(plan.Preemptions, pre...)
			f.preempting, f.protected = pre, prot
		} else if f.quota == nil {
			f.stopping, f.notice = w.stoppingFor(j.ID)
		}
		// 5. Gang reservation.
		if j.IsGang() && f.quota == nil && len(f.preempting) == 0 && !w.hasHolds(j.ID, "") && w.anyPoolFree(j, gangHeld) {
			if cl, pool, ok := w.gangPool(a); ok {
				if _, taken := gangHeld[pool]; !taken && w.reserveGang(a, cl, pool) {
					gangHeld[pool] = j.ID
				}
			}
		}
		failed = append(failed, f)
		if in.OnDecision != nil {
			in.OnDecision(j.ID, false)
		}
	}

	// 6. Explain.
	var wc whyCache
	if shareWhy {
		wc = whyCache{}
	}
	for _, f := range failed {
		plan.Pending[f.j.ID] = w.explain(f, wc)
	}
	for i, f := range timedOut {
		plan.Timeouts[i].Why = w.explain(f, wc)
	}
	// Reservations that can no longer help are dropped: a preemptor's whose
	// victims are gone, a gang's that can never fit now.
	for _, r := range w.holds {
		if expiring[r.Job] && r.Kind == ReservePreemption {
			continue
		}
		if r.Kind == ReserveMinExecutors && w.victim[r.Job] {
			continue // preempted now: its room goes with it
		}
		if r.Kind == ReserveExecutor {
			// Held while tasks on its node stop (its victims, or others'
			// whose rooms count against what is free there), then
			// ExecutorHold more for the executor, which is placed when
			// its Pod is next tried.
			switch {
			case stopping[r.Node]:
				r.Freed = time.Time{}
			case r.Freed.IsZero():
				r.Freed = in.Now
			case !in.Now.Before(r.Freed.Add(ExecutorHold)):
				continue
			}
		}
		if why := plan.Pending[r.Job]; r.Kind == ReserveGang && why != nil && why.NeverFits {
			continue
		}
		plan.Reservations = append(plan.Reservations, r)
	}
	if len(plan.Pending) == 0 {
		plan.Pending = nil
	}
	return plan
}

// malformed says what is wrong with a job that validation should have
// refused ("" if nothing): the core never panics on it.
func malformed(j *structs.Job) string {
	switch {
	case j.Replicas < 1:
		return fmt.Sprintf("replicas %d: a job needs at least one replica", j.Replicas)
	case j.Shape < 0 || j.Shape >= j.NumShapes():
		return fmt.Sprintf("shape %d: the job has %d shapes", j.Shape, j.NumShapes())
	}
	for i := 0; i < j.NumShapes(); i++ {
		s := j.ShapeAt(i)
		r := s.Resources
		if s.Replicas < 1 || r.MilliCPU < 0 || r.Memory < 0 || r.Accels < 0 || r.Accels > structs.MaxAccelsPerNode {
			return fmt.Sprintf("shape %d asks %d replicas of %s: counts must be positive", i, s.Replicas, r)
		}
		for _, c := range r.Devices {
			if c < 0 {
				return fmt.Sprintf("shape %d asks negative devices", i)
			}
		}
	}
	return ""
}

// anyPoolFree reports whether some pool j may use has no gang reservation.
func (w *world) anyPoolFree(j *structs.Job, held map[int16]structs.JobID) bool {
	for _, p := range w.eligiblePools(j) {
		if _, ok := held[p]; !ok {
			return true
		}
	}
	return false
}

// failure records why a job did not place this cycle.
type failure struct {
	ask        // the job, and the clusters its volumes allowed
	shape      int
	quota      *QuotaShortfall
	preempting []Preemption
	protected  *protection // preemption waits for young victims' minimum runtime
	// stopping are the jobs preempted for it in earlier cycles whose
	// tasks are still stopping, notice when the last notice they were
	// given ends (zero: none).
	stopping []structs.JobID
	notice   time.Time
}

// pendingSince is when the job last became pending (its submit time if the
// coordinator has not recorded it).
func pendingSince(j *structs.Job) time.Time {
	if !j.PendingSince.IsZero() {
		return j.PendingSince
	}
	return j.SubmitTime
}

// downgrading reports whether j may use its fallback shapes now.
func downgrading(j *structs.Job, now time.Time) bool {
	return len(j.Fallbacks) > 0 && j.DowngradeAfter > 0 && !now.Before(pendingSince(j).Add(j.DowngradeAfter.D()))
}

// eligiblePools returns the pools j may use, in preference order: high
// its project's pool only; normal its project's pool (unless over its
// public quota: PoolOnly), then the public pool; low the public pool,
// then project pools that lend idle nodes. The slice is shared: read
// only.
func (w *world) eligiblePools(j *structs.Job) []int16 {
	var proj []int16
	hasProj := false
	if j.Project != "" {
		proj, hasProj = w.projPool[j.Project]
	}
	switch {
	case j.Priority == structs.PriorityLow:
		return w.lowPools
	case !hasProj && (j.Priority == structs.PriorityHigh || j.PoolOnly):
		return nil
	case !hasProj:
		return w.lowPools[:1:1] // the public pool
	case j.Priority == structs.PriorityHigh || j.PoolOnly:
		return proj[:1:1]
	}
	return proj
}

// clusterOrder lists the clusters to try for shape s of a's job: those
// no cluster rule rejects (rules.go: a pinned cluster, a cache, its
// volumes), those whose cache holds all of the job's datasets first, then
// by most free accelerators of the asked type (stable: ties keep cluster
// order).
func (w *world) clusterOrder(a ask, s structs.Shape) []int16 {
	j := a.j
	if j.Cluster == "" && j.CacheMountPath == "" && a.only == nil && (j.Topology == nil || j.Topology.Required == "") {
		return w.orderClusters(j, s, w.allCl) // no cluster rule applies
	}
	c := &jobCtx{ask: a, shape: s}
	c.rules = applying(c) & scopeRules[scopeCluster]
	var ok []int16
	for _, cl := range w.allCl {
		if w.clusterFails(c, cl, askNow) == rOK {
			ok = append(ok, cl)
		}
	}
	return w.orderClusters(j, s, ok)
}

// orderClusters orders clusters (a subset of w.allCl) for shape s of j.
func (w *world) orderClusters(j *structs.Job, s structs.Shape, clusters []int16) []int16 {
	if len(clusters) < 2 {
		return clusters
	}
	out := clusters
	if s.Resources.Accels > 0 {
		out = slices.Clone(clusters)
		free := make([]int64, len(w.clusters))
		for _, g := range w.groups {
			if !classOK(g, s.Resources) {
				continue
			}
			for k, b := range g.idx.b {
				free[g.cluster] += int64(k * len(b))
			}
		}
		slices.SortStableFunc(out, func(a, b int16) int { return cmp.Compare(free[b], free[a]) })
	}
	if len(j.Datasets) > 0 && len(w.snap.Cache) > 0 {
		holds := func(c int16) int {
			if len(w.missingData(j, c)) == 0 && w.snap.Cache[w.clusters[c]] != nil {
				return 0
			}
			return 1
		}
		out = slices.Clone(out)
		slices.SortStableFunc(out, func(a, b int16) int { return cmp.Compare(holds(a), holds(b)) })
	}
	return out
}

// missingData lists j's datasets that cluster c's cache lacks; nil when
// it holds them all or has no cache (there is nothing to warm).
func (w *world) missingData(j *structs.Job, c int16) []string {
	held, ok := w.snap.Cache[w.clusters[c]]
	if !ok {
		return nil
	}
	var out []string
	for _, d := range j.Datasets {
		if !held[d] && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// tryJob tries to place the missing replicas of a's job in pools (in
// order). It returns the placement (applied to w) or the failure to
// explain.
func (w *world) tryJob(a ask, now time.Time, pools []int16) (*Placement, failure) {
	j := a.j
	f := failure{ask: a}
	shapes := []int{0}
	if len(w.liveOf[j.ID]) > 0 {
		shapes = []int{j.Shape} // a partly running service keeps its shape
	} else if downgrading(j, now) {
		for i := 1; i < j.NumShapes(); i++ {
			shapes = append(shapes, i)
		}
	}
	for _, si := range shapes {
		f.shape = si
		s := j.ShapeAt(si)
		missing := w.missing(j, s.Replicas)
		if len(missing) == 0 {
			return &Placement{Job: j.ID, Shape: si}, f
		}
		required := len(missing)
		if !j.IsGang() {
			required = max(0, max(j.MinAvailable, 1)-len(w.liveOf[j.ID]))
			if j.Kind != structs.KindService {
				required = min(required, len(missing))
			}
		}
		required = min(required, len(missing))
		for _, cl := range w.clusterOrder(a, s) {
			c := w.newCtx(a, s, pools, cl)
			if pl, q := w.placeIn(c, si, missing, required); pl != nil {
				pl.Warm = w.missingData(j, cl)
				return pl, f
			} else if q != nil && f.quota == nil {
				f.quota = q
			}
		}
	}
	return nil, f
}

// placeIn places the missing replicas of c's job in one cluster: a gang all
// in one pool (a spark driver with its minimum executors, whose room the
// placement holds); other jobs across pool levels in order, at least
// required of them. It returns nil and any quota shortfall if that is not
// possible.
func (w *world) placeIn(c *jobCtx, si int, missing []int, required int) (*Placement, *QuotaShortfall) {
	var as, held []assignment
	var lvls []int
	gang := c.j.IsGang()
	for lvl := range c.levels {
		if gang {
			got, h := w.placeGang(c, lvl, len(missing))
			if got == nil {
				continue
			}
			as, held, lvls = got, h, repeat(lvl, len(got))
			break
		}
		got := w.placeReplicas(c, lvl, len(missing)-len(as), false)
		as = append(as, got...)
		lvls = append(lvls, repeat(lvl, len(got))...)
		if len(as) == len(missing) {
			break
		}
	}
	if len(as) == 0 || len(as) < required {
		w.undoAll(as)
		return nil, nil
	}
	charge, q := w.chargeFor(c, si, lvls)
	if q != nil {
		w.undoAll(held)
		w.undoAll(as)
		return nil, q
	}
	pl := &Placement{Job: c.j.ID, Shape: si, Charge: charge, Held: w.heldRoom(c.j.ID, held)}
	for i, a := range as {
		pl.Tasks = append(pl.Tasks, TaskPlacement{
			Index:     missing[i],
			Node:      w.nodes[a.ni].n.Name,
			Pool:      w.pools[c.pools[lvls[i]]].Name,
			Resources: a.res,
			Accels:    a.accels,
		})
	}
	return pl, nil
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func (w *world) undoAll(as []assignment) {
	for i := len(as) - 1; i >= 0; i-- {
		w.undo(as[i])
	}
}

// chargeFor returns a normal job's quota charge after placing replicas at
// levels lvls: every replica not in a project pool is charged. It checks
// the increase over what the job holds against the scope's limits and
// applies it to w's usage.
func (w *world) chargeFor(c *jobCtx, si int, lvls []int) (structs.ResourceList, *QuotaShortfall) {
	j := c.j
	if j.Priority != structs.PriorityNormal || j.PoolOnly {
		return nil, nil // only normal jobs that may use the public pool hold quota
	}
	s := j.ShapeAt(si)
	inProject := 0
	for _, k := range w.liveOf[j.ID] {
		if p := w.tasks[k].t.Pool; p != "" && p != structs.PublicPool {
			inProject++
		}
	}
	for _, l := range lvls {
		if c.pools[l] != 0 {
			inProject++
		}
	}
	charged := s.Replicas - inProject
	if charged <= 0 {
		w.recharge(j, nil)
		return nil, nil
	}
	if j.Spark == nil && sameCharge(j.Charged, charged, s.Resources) {
		return j.Charged, nil // unchanged (the common case): shared, read-only
	}
	want := structs.JobCharge(j, s, charged) // a spark job's executors too
	if maps.Equal(want, j.Charged) {
		return j.Charged, nil
	}
	if q := w.quotaCheck(j, want); q != nil {
		return nil, q
	}
	w.recharge(j, want)
	return want, nil
}

// sameCharge reports whether have is exactly what n replicas asking r
// charge (structs.Charge), without building the list.
func sameCharge(have structs.ResourceList, n int, r structs.Resources) bool {
	k := int64(n)
	switch {
	case r.Accels > 0:
		return len(have) == 1 && have[structs.GPUKey(r.AccelType)] == k*r.Accels
	case len(r.Devices) > 0:
		if len(have) != len(r.Devices) {
			return false
		}
		for t, c := range r.Devices {
			if have[structs.DeviceKey(t)] != k*c {
				return false
			}
		}
		return true
	}
	return len(have) == 2 && have[structs.KeyCPU] == k*r.MilliCPU && have[structs.KeyMemory] == k*r.Memory
}

// quotaCheck reports the first key where replacing j's charge by want
// would exceed its scope's limit.
func (w *world) quotaCheck(j *structs.Job, want structs.ResourceList) *QuotaShortfall {
	scope := j.ChargeScope()
	limits := w.snap.Quotas[scope]
	used := w.usage[scope]
	for _, k := range sortedKeys(want) {
		v := want[k]
		if v <= j.Charged[k] {
			continue
		}
		lim, ok := limits[k]
		if !ok || v > lim-(used[k]-j.Charged[k]) { // no overflow: both sides fit int64

			return &QuotaShortfall{Scope: scope, Key: k, Asked: v, Used: used[k] - j.Charged[k], Limit: lim}
		}
	}
	return nil
}

// recharge moves j's charge in w's usage to want.
func (w *world) recharge(j *structs.Job, want structs.ResourceList) {
	if len(j.Charged) == 0 && len(want) == 0 {
		return
	}
	scope := j.ChargeScope()
	if j.ChargedScope != "" {
		scope = j.ChargedScope
	}
	u := w.usage[scope]
	if u == nil {
		u = structs.ResourceList{}
		w.usage[scope] = u
	}
	for k, v := range j.Charged {
		u[k] -= v
	}
	for k, v := range want {
		u[k] += v
	}
}

func sortedKeys(l structs.ResourceList) []structs.ResourceKey {
	out := make([]structs.ResourceKey, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// hasHolds reports whether j holds a reservation of kind k ("" any).
func (w *world) hasHolds(j structs.JobID, k ReservationKind) bool {
	for i := range w.holds {
		if w.holds[i].Job == j && (k == "" || w.holds[i].Kind == k) {
			return true
		}
	}
	return false
}

// stoppingFor lists the low jobs whose preempted tasks are stopping on
// the nodes held for job id's preemption, and when the last notice they
// were given ends (zero: none).
func (w *world) stoppingFor(id structs.JobID) (victims []structs.JobID, notice time.Time) {
	for _, r := range w.holds {
		ni, ok := w.byName[r.Node]
		if r.Job != id || r.Kind != ReservePreemption || !ok {
			continue
		}
		for _, k := range w.nodes[ni].tasks {
			t := w.tasks[k].t
			if t.State != structs.TaskStopping || t.StopReason != structs.StopPreempted || t.Priority != structs.PriorityLow {
				continue
			}
			if !slices.Contains(victims, t.Job) {
				victims = append(victims, t.Job)
			}
			if t.NoticeUntil.After(notice) {
				notice = t.NoticeUntil
			}
		}
	}
	return victims, notice
}

// dropHolds removes j's reservations.
func (w *world) dropHolds(j structs.JobID) {
	if !w.hasHolds(j, "") {
		return
	}
	kept := w.holds[:0:0]
	for _, r := range w.holds {
		if r.Job != j {
			kept = append(kept, r)
		}
	}
	w.holds = kept
	for i := range w.nodes {
		w.nodes[i].holds = w.nodes[i].holds[:0]
	}
	for k, r := range w.holds {
		if ni, ok := w.byName[r.Node]; ok {
			w.nodes[ni].holds = append(w.nodes[ni].holds, int32(k))
		}
	}
}
