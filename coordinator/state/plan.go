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

// use is what tasks hold on one node (and, where counted, the room held
// for spark jobs' executors: nacc accelerators not yet given).
type use struct {
	cpu, mem int64
	accels   structs.AccelMask
	nacc     int64
	devices  map[string]int64
}

func (s *State) nodeUse() map[structs.NodeID]*use {
	m := map[structs.NodeID]*use{}
	for _, t := range s.Tasks {
		if !t.State.HoldsResources() {
			continue
		}
		u := m[t.Node]
		if u == nil {
			u = &use{devices: map[string]int64{}}
			m[t.Node] = u
		}
		u.add(t.Resources, t.Accels)
	}
	return m
}

func (u *use) add(r structs.Resources, a structs.AccelMask) {
	u.cpu += r.MilliCPU
	u.mem += r.Memory
	u.accels |= a
	for d, c := range r.Devices {
		u.devices[d] += c
	}
}

// checkPlacement re-checks pl against the current state.
func (s *State) checkPlacement(pl *sched.Placement, uses map[structs.NodeID]*use) error {
	j := s.Jobs[pl.Job]
	if j == nil || j.State.Ended() {
		return fmt.Errorf("job %s no longer exists or has ended", pl.Job)
	}
	if pl.Shape < 0 || pl.Shape >= j.NumShapes() {
		return fmt.Errorf("job %s has no shape %d", pl.Job, pl.Shape)
	}
	live := map[int]bool{}
	for _, t := range s.TasksOf(pl.Job) {
		if t.Attempt == j.Attempt && t.State.HoldsResources() && t.Executor == "" {
			live[t.Index] = true
		}
	}
	if j.State != structs.JobPending && j.Kind != structs.KindService {
		return fmt.Errorf("job %s is %s, not pending", pl.Job, j.State)
	}
	replicas := j.ShapeAt(pl.Shape).Replicas
	extra := map[structs.NodeID]*use{}
	for _, tp := range pl.Tasks {
		if s.Tasks[taskID(j, tp)] != nil {
			return fmt.Errorf("task %s already exists: name each new task uniquely", taskID(j, tp))
		}
		if tp.Index < 0 || tp.Index >= replicas || live[tp.Index] {
			return fmt.Errorf("job %s replica %d is already placed or out of range", pl.Job, tp.Index)
		}
		live[tp.Index] = true
		n := s.Nodes[tp.Node]
		if n == nil || (n.State != structs.NodeReady && n.State != "") {
			return fmt.Errorf("node %s is gone or not ready", tp.Node)
		}
		u := uses[tp.Node]
		if u == nil {
			u = &use{}
		}
		e := extra[tp.Node]
		if e == nil {
			e = &use{devices: map[string]int64{}}
			extra[tp.Node] = e
		}
		if (u.accels|e.accels)&tp.Accels != 0 || int64(tp.Accels.Count()) != tp.Resources.Accels {
			return fmt.Errorf("accelerators %v on node %s are taken", tp.Accels.Indices(), tp.Node)
		}
		if q := tp.Accels & n.QuarantinedMask(); q != 0 {
			return fmt.Errorf("accelerators %v on node %s are quarantined", q.Indices(), tp.Node)
		}
		if tp.Resources.Accels > 0 && n.Capacity.Accels < 64 && uint64(tp.Accels)>>uint(n.Capacity.Accels) != 0 {
			return fmt.Errorf("node %s has no accelerator %v", tp.Node, tp.Accels.Indices())
		}
		if !fits(n, u, e, tp.Resources, tp.Accels) {
			return fmt.Errorf("node %s has no room left for replica %d", tp.Node, tp.Index)
		}
		e.add(tp.Resources, tp.Accels)
		for d, v := range e.devices {
			if u.devices[d]+v > n.Capacity.Devices[d] {
				return fmt.Errorf("node %s has no %s left", tp.Node, d)
			}
		}
	}
	if j.IsGang() && len(live) != replicas {
		return fmt.Errorf("gang %s would have %d of %d replicas", pl.Job, len(live), replicas)
	}
	if err := s.checkHeld(j, pl, uses, extra); err != nil {
		return err
	}
	if j.Priority == structs.PriorityNormal {
		if q := s.quotaShortfall(j, pl.Charge); q != nil {
			return fmt.Errorf("%s", q)
		}
	}
	return nil
}

// taskID is the ID the committer gave tp, or replica and attempt.
func taskID(j *structs.Job, tp sched.TaskPlacement) structs.TaskID {
	if tp.ID != "" {
		return tp.ID
	}
	return structs.MakeTaskID(j.ID, tp.Index, j.Attempt)
}

// place applies a checked placement.
func (s *State) place(pl *sched.Placement, uses map[structs.NodeID]*use, now time.Time, tokens map[structs.TaskID]string) {
	j := s.Jobs[pl.Job]
	shape := ""
	if pl.Shape > 0 {
		shape = fmt.Sprintf(", fallback shape %d", pl.Shape)
	}
	for _, tp := range pl.Tasks {
		id := taskID(j, tp)
		t := &structs.Task{
			ID: id, Job: j.ID, Index: tp.Index, Attempt: j.Attempt, Node: tp.Node, Pool: tp.Pool,
			Priority: j.Priority, State: structs.TaskScheduled, Resources: tp.Resources, Accels: tp.Accels,
			ScheduledAt: now, Configs: s.taskConfigs(j), Restart: j.Restart,
		}
		s.addTask(t)
		s.placedEvent(now, t, shape)
		if tok, ok := tokens[id]; ok {
			s.Tokens[id] = tok
		}
		u := uses[tp.Node]
		if u == nil {
			u = &use{devices: map[string]int64{}}
			uses[tp.Node] = u
		}
		u.add(tp.Resources, tp.Accels)
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
		addHeld(uses, held)
	}
	s.noteWarmUp(s.Jobs[j.ID], pl, now)
}
