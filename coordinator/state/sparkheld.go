package state

import (
	"fmt"
	"slices"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Room held for a spark job's minimum executors (sched.ReserveMinExecutors;
// see package sched): a placement of its driver carries it
// (Placement.Held), PlanCommit keeps it in Reservations (Made set to its
// index) as used room that nobody else may take, ExecutorAdd takes one per
// executor bound (sched.TakeHeld), and it goes when the job stops running
// (ends, is preempted, restarted or requeued), with its node, or when its
// node no longer has room for it. It survives snapshots and leader
// changes with the rest of Reservations.

// addHeld adds the room held on each node by reservations rs of kind
// ReserveMinExecutors to uses.
func addHeld(uses map[structs.NodeID]*use, rs []sched.Reservation) {
	for _, r := range rs {
		if r.Kind != sched.ReserveMinExecutors {
			continue
		}
		u := uses[r.Node]
		if u == nil {
			u = &use{devices: map[string]int64{}}
			uses[r.Node] = u
		}
		u.cpu += r.Resources.MilliCPU
		u.mem += r.Resources.Memory
		u.nacc += r.Resources.Accels
	}
}

// nodeUseHeld is nodeUse plus the room held for spark jobs' executors.
func (s *State) nodeUseHeld() map[structs.NodeID]*use {
	m := s.nodeUse()
	addHeld(m, s.Reservations)
	return m
}

// fits reports whether node n can also hold r (accels, or when none are
// named r.Accels of its free ones) beside u and e (either may be nil).
func fits(n *structs.Node, u, e *use, r structs.Resources, accels structs.AccelMask) bool {
	var cpu, mem, nacc int64
	var taken structs.AccelMask
	for _, x := range []*use{u, e} {
		if x != nil {
			cpu, mem, nacc, taken = cpu+x.cpu, mem+x.mem, nacc+x.nacc, taken|x.accels
		}
	}
	if cpu+r.MilliCPU > n.Capacity.MilliCPU || mem+r.Memory > n.Capacity.Memory {
		return false
	}
	if r.Accels == 0 && nacc == 0 {
		return true
	}
	want := r.Accels
	if accels != 0 {
		want = 0 // named: counted in taken below
		taken |= accels
	}
	return int64((taken|n.QuarantinedMask()).Count())+nacc+want <= n.Capacity.Accels
}

// checkHeld checks the room pl holds for its spark job's minimum
// executors: one of that kind per executor, at most the job's minimum,
// each an executor's worth on a ready node of its driver's cluster; and
// adds it to extra, failing when a node has no room for it beside uses.
func (s *State) checkHeld(j *structs.Job, pl *sched.Placement, uses, extra map[structs.NodeID]*use) error {
	if len(pl.Held) == 0 {
		return nil
	}
	if j.Spark == nil || len(pl.Held) > j.Spark.MinExecutors() || len(pl.Tasks) == 0 {
		return fmt.Errorf("job %s holds room for %d executors: more than its minimum", j.ID, len(pl.Held))
	}
	near := s.Nodes[pl.Tasks[0].Node]
	want := j.Spark.ExecutorResources()
	for _, r := range pl.Held {
		n := s.Nodes[r.Node]
		switch {
		case r.Kind != sched.ReserveMinExecutors || r.Job != j.ID:
			return fmt.Errorf("job %s: held room must be of kind %s for the job", j.ID, sched.ReserveMinExecutors)
		case n == nil || (n.State != structs.NodeReady && n.State != ""):
			return fmt.Errorf("node %s is gone or not ready", r.Node)
		case near != nil && n.Cluster != near.Cluster:
			return fmt.Errorf("node %s is not in its driver's cluster", r.Node)
		case r.Resources.Accels != want.Accels || (want.Accels == 0 && (r.Resources.MilliCPU != want.MilliCPU || r.Resources.Memory != want.Memory)):
			return fmt.Errorf("room %s held on node %s is not job %s's executor (%s)", r.Resources, r.Node, j.ID, want)
		}
		e := extra[r.Node]
		if e == nil {
			e = &use{devices: map[string]int64{}}
			extra[r.Node] = e
		}
		if !fits(n, uses[r.Node], e, r.Resources, 0) {
			return fmt.Errorf("node %s has no room left for an executor of job %s", r.Node, j.ID)
		}
		e.cpu, e.mem, e.nacc = e.cpu+r.Resources.MilliCPU, e.mem+r.Resources.Memory, e.nacc+r.Resources.Accels
	}
	return nil
}

// dropHeld releases the room held for job id's executors (the job stops
// running).
func (s *State) dropHeld(id structs.JobID) {
	if !slices.ContainsFunc(s.Reservations, func(r sched.Reservation) bool { return r.Kind == sched.ReserveMinExecutors && r.Job == id }) {
		return
	}
	s.Reservations = slices.DeleteFunc(slices.Clone(s.Reservations), func(r sched.Reservation) bool {
		return r.Kind == sched.ReserveMinExecutors && r.Job == id
	})
}

// trimHeld drops the room held on node for spark executors that it can
// no longer hold: all of it when the node is gone or not ready, else the
// latest until what is left fits beside its tasks.
func (s *State) trimHeld(node structs.NodeID) {
	idx := slices.IndexFunc(s.Reservations, func(r sched.Reservation) bool { return r.Kind == sched.ReserveMinExecutors && r.Node == node })
	if idx < 0 {
		return
	}
	n := s.Nodes[node]
	rs := slices.Clone(s.Reservations)
	for {
		if n != nil && (n.State == structs.NodeReady || n.State == "") {
			u := s.nodeUse()[node]
			h := map[structs.NodeID]*use{}
			addHeld(h, rs)
			if fits(n, u, h[node], structs.Resources{}, 0) {
				break
			}
		}
		last := -1
		for i, r := range rs {
			if r.Kind == sched.ReserveMinExecutors && r.Node == node {
				last = i
			}
		}
		if last < 0 {
			break
		}
		rs = slices.Delete(rs, last, last+1)
	}
	s.Reservations = rs
}
