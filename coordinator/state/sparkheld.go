package state

import (
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

// nodeUseHeld is nodeUse plus the room held for spark jobs' executors.
func (s *State) nodeUseHeld() sched.Uses {
	m := s.nodeUse()
	m.AddHeld(s.Reservations)
	return m
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
		if n != nil && n.Ready() {
			h := sched.Uses{}
			h.AddHeld(rs)
			if sched.Fits(n, s.nodeUse()[node], h[node], structs.Resources{}, 0) {
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
