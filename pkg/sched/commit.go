package sched

import (
	"fmt"
	"maps"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// A plan is computed on a snapshot and committed later, through Raft:
// whoever commits it (the state machine, or schedtest's harness) checks
// each placement again with CheckPlacement against the state it is
// committed to, and rejects a placement that no longer holds, whole. The
// node rules a plan can break in between are checked again: the node is
// still there and ready (rNotReady), the accelerators exist, are not
// quarantined (rBadAccel) and not taken, and the room is free (rFree);
// and so are the job's: it still wants those replicas, a gang lands
// whole, quota allows the charge. Rules a plan cannot break (pools,
// classes, taints, selectors...) are not checked again.

// NodeUse is what is taken of one node: by tasks (their resources and
// accelerators) and by room held for spark jobs' minimum executors
// (HeldAccels accelerators, counted but not given yet).
type NodeUse struct {
	MilliCPU, Memory int64
	Accels           structs.AccelMask
	HeldAccels       int64
	Devices          map[string]int64
}

// Uses is what is taken of each node.
type Uses map[structs.NodeID]*NodeUse

// At returns node n's use, adding an empty one.
func (u Uses) At(n structs.NodeID) *NodeUse {
	x := u[n]
	if x == nil {
		x = &NodeUse{Devices: map[string]int64{}}
		u[n] = x
	}
	return x
}

// Add counts a task holding r on accelerators accels on node n.
func (u Uses) Add(n structs.NodeID, r structs.Resources, accels structs.AccelMask) {
	u.At(n).Add(r, accels)
}

// AddHeld counts the room rs holds for spark jobs' minimum executors
// (ReserveMinExecutors; other reservations bind nobody at commit).
func (u Uses) AddHeld(rs []Reservation) {
	for _, r := range rs {
		if r.Kind == ReserveMinExecutors {
			u.At(r.Node).Hold(r.Resources)
		}
	}
}

// Add counts a task holding r on accelerators accels.
func (x *NodeUse) Add(r structs.Resources, accels structs.AccelMask) {
	x.MilliCPU += r.MilliCPU
	x.Memory += r.Memory
	x.Accels |= accels
	for d, c := range r.Devices {
		x.Devices[d] += c
	}
}

// Hold counts room r held for a spark executor.
func (x *NodeUse) Hold(r structs.Resources) {
	x.MilliCPU += r.MilliCPU
	x.Memory += r.Memory
	x.HeldAccels += r.Accels
}

// Fits reports whether node n can also hold r (on accels, or when none
// are named on r.Accels of its free ones) beside what u and more take
// (either may be nil): the rFree rule as a commit sees it.
func Fits(n *structs.Node, u, more *NodeUse, r structs.Resources, accels structs.AccelMask) bool {
	var cpu, mem, nacc int64
	var taken structs.AccelMask
	for _, x := range []*NodeUse{u, more} {
		if x != nil {
			cpu, mem, nacc, taken = cpu+x.MilliCPU, mem+x.Memory, nacc+x.HeldAccels, taken|x.Accels
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

// CheckNode checks that node n, named name (nil: it is gone), may take
// one more task, called what in errors, holding r on accelerators accels
// beside what u and more take: it is ready, the accelerators exist and
// are neither quarantined nor taken, and it has room.
func CheckNode(name structs.NodeID, n *structs.Node, u, more *NodeUse, r structs.Resources, accels structs.AccelMask, what string) error {
	var taken structs.AccelMask
	for _, x := range []*NodeUse{u, more} {
		if x != nil {
			taken |= x.Accels
		}
	}
	switch {
	case n == nil || !n.Ready():
		return fmt.Errorf("node %s is gone or not ready", name)
	case taken&accels != 0 || int64(accels.Count()) != r.Accels:
		return fmt.Errorf("accelerators %v on node %s are taken", accels.Indices(), name)
	case accels&n.QuarantinedMask() != 0:
		return fmt.Errorf("accelerators %v on node %s are quarantined", (accels & n.QuarantinedMask()).Indices(), name)
	case r.Accels > 0 && n.Capacity.Accels < 64 && uint64(accels)>>uint(max(n.Capacity.Accels, 0)) != 0:
		return fmt.Errorf("node %s has no accelerator %v", name, accels.Indices())
	case !Fits(n, u, more, r, accels):
		return fmt.Errorf("node %s has no room left for %s", name, what)
	}
	for d, v := range r.Devices {
		for _, x := range []*NodeUse{u, more} {
			if x != nil {
				v += x.Devices[d]
			}
		}
		if v > n.Capacity.Devices[d] {
			return fmt.Errorf("node %s has no %s left", name, d)
		}
	}
	return nil
}

// CommitState is what CheckPlacement reads of the state a plan is
// committed to.
type CommitState interface {
	Node(structs.NodeID) *structs.Node
	// TasksOf lists a job's tasks, of any attempt and state.
	TasksOf(structs.JobID) []*structs.Task
	HasTask(structs.TaskID) bool
	// Quota is a scope's limits and what it has charged now.
	Quota(structs.Scope) (limits, used structs.ResourceList)
}

// TaskID is the ID of the task tp places for job j: the one its
// committer gave it, else made of the replica and j's attempt.
func (tp TaskPlacement) TaskID(j *structs.Job) structs.TaskID {
	if tp.ID != "" {
		return tp.ID
	}
	return structs.MakeTaskID(j.ID, tp.Index, j.Attempt)
}

// CheckPlacement checks placement pl of job j (nil: gone), computed on an
// earlier snapshot, against the state st it is committed to, where uses
// is what tasks and held room take now (placements committed before it
// included). It returns why pl no longer holds, or nil.
func CheckPlacement(st CommitState, j *structs.Job, pl *Placement, uses Uses) error {
	if j == nil || j.State.Ended() {
		return fmt.Errorf("job %s no longer exists or has ended", pl.Job)
	}
	if pl.Shape < 0 || pl.Shape >= j.NumShapes() {
		return fmt.Errorf("job %s has no shape %d", pl.Job, pl.Shape)
	}
	live := map[int]bool{}
	for _, t := range st.TasksOf(pl.Job) {
		if t.Attempt == j.Attempt && t.State.HoldsResources() && t.Executor == "" {
			live[t.Index] = true
		}
	}
	if j.State != structs.JobPending && j.Kind != structs.KindService {
		return fmt.Errorf("job %s is %s, not pending", pl.Job, j.State)
	}
	replicas := j.ShapeAt(pl.Shape).Replicas
	more := Uses{}
	for _, tp := range pl.Tasks {
		if id := tp.TaskID(j); st.HasTask(id) {
			return fmt.Errorf("task %s already exists: name each new task uniquely", id)
		}
		if tp.Index < 0 || tp.Index >= replicas || live[tp.Index] {
			return fmt.Errorf("job %s replica %d is already placed or out of range", pl.Job, tp.Index)
		}
		live[tp.Index] = true
		if err := CheckNode(tp.Node, st.Node(tp.Node), uses[tp.Node], more.At(tp.Node), tp.Resources, tp.Accels, fmt.Sprintf("replica %d", tp.Index)); err != nil {
			return err
		}
		more.Add(tp.Node, tp.Resources, tp.Accels)
	}
	if j.IsGang() && len(live) != replicas {
		return fmt.Errorf("gang %s would have %d of %d replicas", pl.Job, len(live), replicas)
	}
	if err := checkHeld(st, j, pl, uses, more); err != nil {
		return err
	}
	if j.Priority == structs.PriorityNormal {
		limits, used := st.Quota(j.ChargeScope())
		if q := ChargeShortfall(j, pl.Charge, limits, used); q != nil {
			return fmt.Errorf("%s", q)
		}
	}
	return nil
}

// checkHeld checks the room pl holds for its spark job's minimum
// executors: one of that kind per executor, at most the job's minimum,
// each an executor's worth on a ready node of its driver's cluster with
// room for it beside uses and more (which it adds to).
func checkHeld(st CommitState, j *structs.Job, pl *Placement, uses, more Uses) error {
	if len(pl.Held) == 0 {
		return nil
	}
	if j.Spark == nil || len(pl.Held) > j.Spark.MinExecutors() || len(pl.Tasks) == 0 {
		return fmt.Errorf("job %s holds room for %d executors: more than its minimum", j.ID, len(pl.Held))
	}
	near := st.Node(pl.Tasks[0].Node)
	want := j.Spark.ExecutorResources()
	for _, r := range pl.Held {
		n := st.Node(r.Node)
		switch {
		case r.Kind != ReserveMinExecutors || r.Job != j.ID:
			return fmt.Errorf("job %s: held room must be of kind %s for the job", j.ID, ReserveMinExecutors)
		case n == nil || !n.Ready():
			return fmt.Errorf("node %s is gone or not ready", r.Node)
		case near != nil && n.Cluster != near.Cluster:
			return fmt.Errorf("node %s is not in its driver's cluster", r.Node)
		case r.Resources.Accels != want.Accels || (want.Accels == 0 && (r.Resources.MilliCPU != want.MilliCPU || r.Resources.Memory != want.Memory)):
			return fmt.Errorf("room %s held on node %s is not job %s's executor (%s)", r.Resources, r.Node, j.ID, want)
		}
		if !Fits(n, uses[r.Node], more.At(r.Node), r.Resources, 0) {
			return fmt.Errorf("node %s has no room left for an executor of job %s", r.Node, j.ID)
		}
		more.At(r.Node).Hold(r.Resources)
	}
	return nil
}

// ChargeShortfall is the first key (in order) where charging j want
// instead of what it holds would take its scope past limits, with used
// charged now; said as quota get shows it: in use with this job's charge,
// asked what comes on top. Nil when want fits.
func ChargeShortfall(j *structs.Job, want, limits, used structs.ResourceList) *QuotaShortfall {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v := want[k]
		if v <= j.Charged[k] {
			continue
		}
		u, more := used[k], v-j.Charged[k]
		lim, ok := limits[k]
		if !ok || u+more > lim {
			return &QuotaShortfall{Scope: j.ChargeScope(), Key: k, Asked: more, Used: u, Limit: lim}
		}
	}
	return nil
}
