package sched

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// A spark job's driver is placed with its minimum executors as one gang
// (structs.Spark.MinExecutors; the package documentation): in one decision the driver
// and that many executors fit, on nodes of one pool of one cluster that
// the executors may use (the job's constraints, the executor's
// nodeSelector and GPU type), or the driver stays Pending. The executors
// are not tasks yet (Spark asks for their Pods once the driver runs): the
// room they took is held for the job (ReserveMinExecutors, Placement.Held)
// until its executor Pods bind into it (PlaceExecutor tries it first,
// TakeHeld takes it), or the job stops running. Nobody else may use it;
// a higher job gets a low spark job's room only by preempting the whole
// job, driver, executors and held room together. On a cluster that runs
// no executors (Snapshot.NoExecutors) the driver goes alone.

// sparkGang returns how many executors spark job j's driver must be
// placed with in cluster cl: its minimum executors, unless its driver
// runs already, cl runs no executors, or cl is not one cluster (-1).
func (w *world) sparkGang(j *structs.Job, cl int16) int {
	if j.Kind != structs.KindSpark || j.Spark == nil || cl < 0 || len(w.liveOf[j.ID]) > 0 {
		return 0
	}
	if w.snap.NoExecutors[w.clusters[cl]] {
		return 0
	}
	return j.Spark.MinExecutors()
}

// executorJob is the one-replica job standing for one executor of spark
// job j, asking its executor's resources (cached per world).
func (w *world) executorJob(j *structs.Job) *structs.Job {
	if ej := w.execJobs[j]; ej != nil {
		return ej
	}
	ej := executorJobFor(j, j.Spark.ExecutorResources())
	if w.execJobs == nil {
		w.execJobs = map[*structs.Job]*structs.Job{}
	}
	w.execJobs[j] = ej
	return ej
}

// executorJobFor is a one-replica job like spark job j asking res: its
// priority, project, tolerations and affinity to other jobs, its selector
// plus its executor's nodeSelector, pinned to no node.
func executorJobFor(j *structs.Job, res structs.Resources) *structs.Job {
	jj := *j
	jj.Kind, jj.Replicas, jj.MinAvailable, jj.Resources, jj.Fallbacks, jj.NodeName, jj.Spark = structs.KindCommand, 1, 0, res, nil, "", nil
	jj.Affinity.SpreadReplicas = false
	var sel []string
	if j.Selector != "" {
		sel = append(sel, j.Selector)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Spark.Executor.NodeSelector)) {
		sel = append(sel, k+"="+j.Spark.Executor.NodeSelector[k])
	}
	jj.Selector = strings.Join(sel, ",")
	return &jj
}

// placeGang places n replicas of gang c at pool level lvl, all or none,
// and for a spark job its minimum executors with them (held), in one
// domain of its topology if it asks for one (placeTopo). Both are applied
// to w.
func (w *world) placeGang(c *jobCtx, lvl, n int) (as, held []assignment) {
	if c.topo != nil && c.dom < 0 {
		return w.placeTopo(c, lvl, n)
	}
	return w.placeGangIn(c, lvl, n)
}

// placeGangIn is placeGang where c is (c.dom, or nowhere in particular):
// the driver first, else, where the driver would block them, the
// executors first.
func (w *world) placeGangIn(c *jobCtx, lvl, n int) (as, held []assignment) {
	e := c.exec
	if e == nil {
		return w.placeReplicas(c, lvl, n, true), nil
	}
	used := len(c.used)
	if as = w.placeReplicas(c, lvl, n, true); as == nil {
		return nil, nil // executors only take room from it
	}
	if held = w.placeReplicas(e, lvl, c.execN, true); held != nil {
		return as, held
	}
	w.undoAll(as)
	c.used = c.used[:used]
	if held = w.placeReplicas(e, lvl, c.execN, true); held == nil {
		return nil, nil
	}
	if as = w.placeReplicas(c, lvl, n, true); as == nil {
		w.undoAll(held)
		return nil, nil
	}
	return as, held
}

// heldRoom is the room held assignments take for job id's executors.
func (w *world) heldRoom(id structs.JobID, held []assignment) []Reservation {
	if len(held) == 0 {
		return nil
	}
	out := make([]Reservation, len(held))
	for i, a := range held {
		out[i] = Reservation{Job: id, Node: w.nodes[a.ni].n.Name, Resources: a.res, Kind: ReserveMinExecutors}
	}
	return out
}

// heldLives reports whether room held for a spark job's minimum
// executors (r, ReserveMinExecutors) still binds: its job is a spark job
// that runs (Scheduled or Running) and is not being stopped.
func (w *world) heldLives(r Reservation) bool {
	j := w.snap.Jobs[r.Job]
	return j != nil && j.Spark != nil && (j.State == structs.JobScheduled || j.State == structs.JobRunning) && !w.victim[r.Job]
}

// TakeHeld returns rs less the room an executor of spark job id takes
// when it binds on node: one of the job's ReserveMinExecutors
// reservations, the first on node if it has one there, else its last
// (an executor bound elsewhere still counts towards its minimum). rs is
// not changed; when the job holds none, rs itself is returned.
func TakeHeld(rs []Reservation, id structs.JobID, node structs.NodeID) []Reservation {
	at := -1
	for i, r := range rs {
		if r.Kind != ReserveMinExecutors || r.Job != id {
			continue
		}
		if r.Node == node {
			at = i
			break
		}
		at = i
	}
	if at < 0 {
		return rs
	}
	return slices.Delete(slices.Clone(rs), at, at+1)
}

// HeldRoom returns the room rs holds for spark job id's minimum
// executors (ReserveMinExecutors), in order.
func HeldRoom(rs []Reservation, id structs.JobID) []Reservation {
	var out []Reservation
	for _, r := range rs {
		if r.Kind == ReserveMinExecutors && r.Job == id {
			out = append(out, r)
		}
	}
	return out
}

// SparkShortfall says why a spark job's driver waits for room for its
// minimum executors (placed with it as one gang).
type SparkShortfall struct {
	Executors int               `json:"executors"` // minimum executors, placed with the driver
	Driver    structs.Resources `json:"driver"`
	Executor  structs.Resources `json:"executor"` // each
	// Fit is how many executors fit now in the pool of one cluster where
	// most do; MaxFit how many on its empty nodes, where the driver could
	// run too (both at most Executors).
	Fit    int `json:"fit"`
	MaxFit int `json:"maxFit"`
	// Nodes is how many nodes were considered for executors, NodesFit on
	// how many one fits now; Filtered counts the others by reason.
	Nodes    int     `json:"nodes"`
	NodesFit int     `json:"nodesFit"`
	Filtered []Count `json:"filtered,omitempty"`
}

func (s *SparkShortfall) String() string {
	msg := fmt.Sprintf("driver + %d %s need %s + %d × %s at once, in one pool of one cluster: %d %s now, at most %d on empty nodes",
		s.Executors, plural(s.Executors, "executor", "executors"), s.Driver, s.Executors, s.Executor,
		s.Fit, plural(s.Fit, "executor fits", "executors fit"), s.MaxFit)
	if len(s.Filtered) > 0 {
		var f []string
		for _, c := range s.Filtered {
			f = append(f, fmt.Sprintf("%d %s", c.Nodes, c.Reason))
		}
		msg += fmt.Sprintf("; for executors %d/%d nodes fit: %s", s.NodesFit, s.Nodes, strings.Join(f, ", "))
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// explainSpark sets why.Spark for the spark job of c, whose driver waits
// with its minimum executors: how many executors fit now and ever in
// the pools (of clusters that run executors) it may use, and why nodes
// are left out for them. driverEver counts, per domain, how many drivers
// fit on nodes that could ever take one. The job can never fit when no
// domain holds its driver and its minimum executors that way.
func (w *world) explainSpark(c *jobCtx, why *Why, driverEver map[domain]int) {
	j := c.j
	if j.Kind != structs.KindSpark || j.Spark == nil || len(w.liveOf[j.ID]) > 0 {
		return
	}
	m := j.Spark.MinExecutors()
	if m == 0 {
		return
	}
	ec := w.execCtx(c.ask, c.pools, -1)
	er := ec.shape.Resources
	sf := &SparkShortfall{Executors: m, Driver: j.Resources, Executor: er}
	now, ever := map[domain]int{}, map[domain]int{}
	counts := map[string]int{}
	var order []string
	add := func(text string, n int) {
		if counts[text] == 0 {
			order = append(order, text)
		}
		counts[text] += n
	}
	for _, g := range w.groups {
		rs := w.groupFails(ec, g, askNow)
		if w.snap.NoExecutors[w.clusters[g.cluster]] || (rs != rOK && rs != rClass) {
			continue // the driver's counts say why; there it goes alone
		}
		sf.Nodes += len(g.nodes)
		if rs == rClass {
			add(w.text(rClass, ec, g.nodes[0]), len(g.nodes))
			continue
		}
		gd := domainOf(g, true)
		for _, ni := range g.nodes {
			d := w.domainAt(ec, ni, gd)
			first, failed := w.judge(ec, ni, askNow, askEver)
			if failed&askEver == 0 {
				ever[d] += w.slots(ec, ni, true, true)
			}
			if first == rOK {
				sf.NodesFit++
				now[d] += w.slots(ec, ni, false, false)
				continue
			}
			add(w.text(first, ec, ni), 1)
		}
	}
	if sf.Nodes == 0 {
		return // no cluster it may use runs executors: the driver goes alone
	}
	never := true
	for d, n := range ever {
		if driverEver[d] > 0 {
			sf.MaxFit = max(sf.MaxFit, min(n, m))
			if n >= m {
				never = false
			}
		}
	}
	for _, n := range now {
		sf.Fit = max(sf.Fit, min(n, m))
	}
	for _, text := range order {
		sf.Filtered = append(sf.Filtered, Count{Reason: text, Nodes: counts[text]})
	}
	slices.SortStableFunc(sf.Filtered, func(a, b Count) int {
		if a.Nodes != b.Nodes {
			return b.Nodes - a.Nodes
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	why.Spark, why.Gang = sf, nil // one replica: the executors are the gang
	if ec.required() {
		// Where the driver could go too.
		for d := range ever {
			if driverEver[d] == 0 {
				delete(ever, d)
				delete(now, d)
			}
		}
		why.Topology = w.topologyShortfall(ec, "executors", m, now, ever)
	}
	if never {
		why.NeverFits = true
	}
}
