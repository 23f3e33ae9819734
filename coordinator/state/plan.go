package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// PlanCommit applies a scheduling plan computed by the leader on an
// earlier snapshot. Every placement is checked again against the current
// state (the job still wants those replicas, nodes are ready with room and
// free accelerators, quota still allows the charge); a placement that no
// longer holds is rejected whole (a gang never lands partly), the rest
// apply. Tokens carries each new task's allocation token (made by the
// leader: Apply creates no randomness).
type PlanCommit struct {
	Plan   *sched.Plan               `json:"plan"`
	Now    time.Time                 `json:"now"`
	Tokens map[structs.TaskID]string `json:"tokens,omitempty"`
}

// CommitResult reports what applied.
type CommitResult struct {
	Placed   []structs.JobID `json:"placed,omitempty"`
	Rejected []Rejection     `json:"rejected,omitempty"`
}

// Rejection is a placement that no longer held at apply time.
type Rejection struct {
	Job    structs.JobID `json:"job"`
	Reason string        `json:"reason"`
}

func (*PlanCommit) Type() MsgType { return MsgPlanCommit }

func (c *PlanCommit) apply(s *State) (any, error) {
	if c.Plan == nil {
		return nil, invalidf("plan commit: no plan")
	}
	var res CommitResult
	use := s.nodeUseHeld() // room held for spark executors is used
	for i := range c.Plan.Placements {
		pl := &c.Plan.Placements[i]
		if err := s.checkPlacement(pl, use); err != nil {
			res.Rejected = append(res.Rejected, Rejection{Job: pl.Job, Reason: err.Error()})
			continue
		}
		s.place(pl, use, c.Now, c.Tokens)
		res.Placed = append(res.Placed, pl.Job)
	}
	for _, p := range c.Plan.Preemptions {
		s.stopVictim(p, c.Now)
	}
	for _, to := range c.Plan.Timeouts {
		j := s.Jobs[to.Job]
		if j == nil || j.State != structs.JobPending {
			continue
		}
		reason := to.Reason
		if to.Why != nil && to.Why.Message != "" {
			reason += ": " + to.Why.Message
		}
		s.endJob(to.Job, structs.JobFailed, reason, c.Now, structs.StopCancelled)
	}
	s.Reservations = s.keepReservations(c.Plan)
	return res, nil
}

// nodeUse is what tasks take of each node.
func (s *State) nodeUse() sched.Uses {
	m := sched.Uses{}
	for _, t := range s.Tasks {
		if t.State.HoldsResources() {
			m.Add(t.Node, t.Resources, t.Accels)
		}
	}
	return m
}

// checkPlacement re-checks pl against the current state (sched.CheckPlacement).
func (s *State) checkPlacement(pl *sched.Placement, uses sched.Uses) error {
	return sched.CheckPlacement(commitView{s}, s.Jobs[pl.Job], pl, uses)
}

// commitView is the state as sched.CheckPlacement reads it.
type commitView struct{ s *State }

func (v commitView) Node(id structs.NodeID) *structs.Node     { return v.s.Nodes[id] }
func (v commitView) TasksOf(id structs.JobID) []*structs.Task { return v.s.TasksOf(id) }
func (v commitView) HasTask(id structs.TaskID) bool           { return v.s.Tasks[id] != nil }
func (v commitView) Quota(sc structs.Scope) (_, _ structs.ResourceList) {
	return v.s.Quotas[sc], v.s.Usage[sc]
}

// place applies a checked placement.
func (s *State) place(pl *sched.Placement, uses sched.Uses, now time.Time, tokens map[structs.TaskID]string) {
	j := s.Jobs[pl.Job]
	shape := ""
	if pl.Shape > 0 {
		shape = fmt.Sprintf(", fallback shape %d", pl.Shape)
	}
	for _, tp := range pl.Tasks {
		id := tp.TaskID(j)
		t := &structs.Task{
			ID: id, Job: j.ID, Index: tp.Index, Attempt: j.Attempt, Node: tp.Node, Pool: tp.Pool,
			Priority: j.Priority, State: structs.TaskScheduled, Resources: tp.Resources, Accels: tp.Accels,
			ScheduledAt: now, Configs: s.taskConfigs(j), Restart: j.Restart,
			Devices: s.freeDevices(tp.Node, tp.Resources.Devices),
		}
		s.addTask(t)
		s.placedEvent(now, t, shape)
		if tok, ok := tokens[id]; ok {
			s.Tokens[id] = tok
		}
		uses.Add(tp.Node, tp.Resources, tp.Accels)
	}
	scope := j.ChargedScope
	if scope == "" {
		scope = j.ChargeScope()
	}
	if j.Priority == structs.PriorityNormal {
		s.charge(scope, j.Charged, pl.Charge)
	}
	s.putJob(j.ID, func(j *structs.Job) {
		if j.State == structs.JobPending {
			j.State, j.Reason = structs.JobScheduled, ""
		}
		// A service given replicas (by a plan made before it was
		// preempted whole) runs on: its attempt is no longer stopped
		// whole.
		j.AttemptStop = ""
		j.Shape = pl.Shape
		if j.Priority == structs.PriorityNormal {
			j.Charged, j.ChargedScope = pl.Charge, ""
			if pl.Charge != nil {
				j.ChargedScope = scope
			}
		}
	})
	s.dropReservations(j.ID)
	if len(pl.Held) > 0 {
		// The room its minimum executors took: held until they bind.
		held := make([]sched.Reservation, len(pl.Held))
		for i, r := range pl.Held {
			r.Made, r.Freed = s.Index, time.Time{}
			held[i] = r
		}
		s.Reservations = append(slices.Clone(s.Reservations), held...)
		uses.AddHeld(held)
	}
	s.noteWarmUp(s.Jobs[j.ID], pl, now)
}

// freeDevices picks the edge devices a task asking for want gets on
// node: of each type, the lowest indices no live task there holds
// (checkPlacement made sure enough are free).
func (s *State) freeDevices(node structs.NodeID, want map[string]int64) map[string][]int {
	if len(want) == 0 {
		return nil
	}
	held := map[string]map[int]bool{}
	for _, t := range s.Tasks {
		if t.Node != node || !t.State.HoldsResources() {
			continue
		}
		for d, idx := range t.Devices {
			if held[d] == nil {
				held[d] = map[int]bool{}
			}
			for _, i := range idx {
				held[d][i] = true
			}
		}
	}
	var capa map[string]int64
	if n := s.Nodes[node]; n != nil {
		capa = n.Capacity.Devices
	}
	out := map[string][]int{}
	for d, n := range want {
		for i := 0; len(out[d]) < int(n) && int64(i) < capa[d]; i++ {
			if !held[d][i] {
				out[d] = append(out[d], i)
			}
		}
	}
	return out
}
