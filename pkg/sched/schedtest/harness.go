package schedtest

import (
	"cmp"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Harness is a small in-memory coordinator: it submits jobs through
// sched.Admit, runs sched.Schedule cycles and applies the plans the way the
// state machine does (tasks created Running, victims stopped then requeued,
// timeouts failed, quota charged and released), checking
// sched.CheckInvariants after every step.
type Harness struct {
	T    testing.TB
	Snap *sched.Snapshot
	Now  time.Time
	// Last is the most recent plan.
	Last *sched.Plan
	seq  int
	// FairShare is how usage is counted (nil: the defaults), FairUsage
	// the fair-share usage (accrued by Accrue, and as tasks start and end),
	// Weights the scopes' fair-share weights (missing: 1). Each cycle
	// orders by them (Snapshot.FairShare, from sched.Positions), as the
	// coordinator does.
	FairShare *structs.FairShare
	FairUsage sched.Usage
	Weights   map[structs.Scope]float64
	// ended keeps every task that stopped holding resources, as it
	// ended: the usage is checked against the usage recomputed from all
	// tasks.
	ended []*structs.Task
	// WholeServices and ResourcesBeforeWork are the options every cycle
	// runs with (sched.Input).
	WholeServices, ResourcesBeforeWork bool
}

// New returns a harness over nodes with a fixed clock.
func New(t testing.TB, nodes ...*structs.Node) *Harness {
	return &Harness{T: t, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Snap: &sched.Snapshot{
		Nodes:  nodes,
		Quotas: map[structs.Scope]structs.ResourceList{},
		Usage:  map[structs.Scope]structs.ResourceList{},
		Jobs:   map[structs.JobID]*structs.Job{},
	}}
}

// Quota sets a scope's limits.
func (h *Harness) Quota(s structs.Scope, l structs.ResourceList) { h.Snap.Quotas[s] = l }

// Pool adds a project pool.
func (h *Harness) Pool(p *structs.Pool) { h.Snap.Pools = append(h.Snap.Pools, p) }

// Topology gives the nodes' cluster (that of the first node) the
// topology levels levels, widest first.
func (h *Harness) Topology(levels ...string) {
	var c structs.ClusterID
	if len(h.Snap.Nodes) > 0 {
		c = h.Snap.Nodes[0].Cluster
	}
	if h.Snap.Topology == nil {
		h.Snap.Topology = map[structs.ClusterID][]string{}
	}
	h.Snap.Topology[c] = levels
}

// Advance moves the clock.
func (h *Harness) Advance(d time.Duration) { h.Now = h.Now.Add(d) }

// Node returns the node named n.
func (h *Harness) Node(n string) *structs.Node {
	for _, x := range h.Snap.Nodes {
		if string(x.Name) == n {
			return x
		}
	}
	h.T.Fatalf("no node %s", n)
	return nil
}

// Submit admits j (a copy) at the current time and stores it.
func (h *Harness) Submit(j *structs.Job) error {
	h.T.Helper()
	if _, dup := h.Snap.Jobs[j.ID]; dup {
		return errAlreadyExists(j.ID)
	}
	a, err := sched.Admit(h.Snap, j)
	if err != nil {
		return err
	}
	jj := *j
	jj.State, jj.SubmitTime, jj.PendingSince = structs.JobPending, h.Now, h.Now
	jj.PoolOnly = a.PoolOnly
	if a.Charge != nil {
		jj.ChargedScope, jj.Charged = a.Scope, a.Charge
		h.charge(a.Scope, nil, a.Charge)
	}
	h.Snap.Jobs[jj.ID] = &jj
	h.check()
	return nil
}

// MustSubmit submits and fails the test on error.
func (h *Harness) MustSubmit(j *structs.Job) {
	h.T.Helper()
	require.NoError(h.T, h.Submit(j))
}

type errAlreadyExists structs.JobID

func (e errAlreadyExists) Error() string { return "job " + string(e) + " already exists" }

func (h *Harness) charge(s structs.Scope, old, new structs.ResourceList) {
	u := h.Snap.Usage[s]
	if u == nil {
		u = structs.ResourceList{}
		h.Snap.Usage[s] = u
	}
	for k, v := range old {
		u[k] -= v
	}
	for k, v := range new {
		u[k] += v
	}
	for k, v := range u {
		if v == 0 {
			delete(u, k)
		}
	}
}

// Pending lists jobs that want replicas: pending jobs and services short
// of replicas.
func (h *Harness) Pending() []*structs.Job {
	live := map[structs.JobID]int{}
	for _, t := range h.Snap.Tasks {
		if j := h.Snap.Jobs[t.Job]; j != nil && t.Attempt == j.Attempt && t.State.HoldsResources() && t.State != structs.TaskStopping {
			live[t.Job]++
		}
	}
	var out []*structs.Job
	for _, id := range slices.Sorted(maps.Keys(h.Snap.Jobs)) {
		j := h.Snap.Jobs[id]
		if j.State == structs.JobPending || (j.Kind == structs.KindService && !j.State.Ended() && live[id] < j.ShapeAt(j.Shape).Replicas) {
			out = append(out, j)
		}
	}
	return out
}

// Accrue moves fair-share usage to the current time, as the leader does
// every half-minute.
func (h *Harness) Accrue() {
	h.T.Helper()
	var held []sched.Holding
	for _, t := range h.Snap.Tasks {
		if t.State.HoldsResources() {
			held = append(held, sched.Holding{Account: h.account(t), Rate: h.FairShare.Rate(t.Resources), From: t.ScheduledAt})
		}
	}
	h.FairUsage.Accrue(h.FairShare, h.Now, held)
	h.check()
}

func (h *Harness) account(t *structs.Task) sched.Account {
	return sched.AccountOf(h.Snap.Jobs[t.Job], t, h.poolProject)
}

func (h *Harness) poolProject(id structs.PoolID) structs.ProjectID {
	for _, p := range h.Snap.Pools {
		if p.Name == id {
			return p.Project
		}
	}
	return ""
}

// add stores new task t, holding resources.
func (h *Harness) add(t *structs.Task) {
	h.Snap.Tasks = append(h.Snap.Tasks, t)
	h.FairUsage.Placed(h.FairShare, h.account(t), t)
}

// stopped records that task t stopped holding resources now (the
// caller drops it from the snapshot).
func (h *Harness) stopped(t *structs.Task) {
	e := *t
	e.State, e.EndedAt = structs.TaskSucceeded, h.Now
	h.FairUsage.Ended(h.FairShare, h.account(&e), &e)
	h.ended = append(h.ended, &e)
}

// Cycle runs one scheduling cycle and applies its plan.
func (h *Harness) Cycle() *sched.Plan {
	h.T.Helper()
	h.seq++
	h.Snap.Index = uint64(h.seq)
	h.Snap.FairShare = sched.Positions(&h.FairUsage, func(s structs.Scope) float64 { return h.Weights[s] }, h.Snap.Jobs, h.FairShare.AgingOrDefault())
	p := sched.Schedule(h.Snap, sched.Input{Pending: h.Pending(), Now: h.Now, Seed: uint64(h.seq), WholeServices: h.WholeServices, ResourcesBeforeWork: h.ResourcesBeforeWork})
	h.Last = p
	h.Apply(p)
	return p
}

// Apply applies plan p as the state machine would: each placement
// passes the state machine's re-check (sched.CheckPlacement; the plan was
// made on this very state, so a rejection fails the test), and the room
// a placement holds for a spark job's minimum executors is kept with the
// plan's reservations, made at this index.
func (h *Harness) Apply(p *sched.Plan) {
	h.T.Helper()
	var held []sched.Reservation
	uses := sched.Uses{}
	for _, t := range h.Snap.Tasks {
		if t.State.HoldsResources() {
			uses.Add(t.Node, t.Resources, t.Accels)
		}
	}
	uses.AddHeld(h.Snap.Reservations)
	for _, pl := range p.Placements {
		j := h.Snap.Jobs[pl.Job]
		require.NotNil(h.T, j, "placement for unknown job %s", pl.Job)
		require.NoError(h.T, sched.CheckPlacement(commitView{h}, j, &pl, uses), "the state machine would reject the placement of %s", pl.Job)
		for _, r := range pl.Held {
			r.Made = h.Snap.Index
			held = append(held, r)
		}
		uses.AddHeld(pl.Held)
		for _, tp := range pl.Tasks {
			uses.Add(tp.Node, tp.Resources, tp.Accels)
			h.add(&structs.Task{
				ID: structs.MakeTaskID(j.ID, tp.Index, j.Attempt), Job: j.ID, Index: tp.Index, Attempt: j.Attempt,
				Node: tp.Node, Pool: tp.Pool, Priority: j.Priority, State: structs.TaskRunning,
				Resources: tp.Resources, Accels: tp.Accels, Healthy: true,
				ScheduledAt: h.Now, StartedAt: h.Now,
			})
		}
		scope := j.ChargedScope
		if scope == "" {
			scope = j.ChargeScope()
		}
		h.charge(scope, j.Charged, pl.Charge)
		j.Charged, j.ChargedScope = pl.Charge, ""
		if pl.Charge != nil {
			j.ChargedScope = scope
		}
		j.Shape = pl.Shape
		if j.State == structs.JobPending {
			j.State, j.Reason = structs.JobRunning, ""
		}
	}
	for _, pr := range p.Preemptions {
		ids := map[structs.TaskID]bool{}
		for _, id := range pr.Tasks {
			ids[id] = true
		}
		for _, t := range h.Snap.Tasks {
			if ids[t.ID] {
				t.State, t.StopReason = structs.TaskStopping, structs.StopPreempted
			}
		}
	}
	for _, to := range p.Timeouts {
		h.end(to.Job, structs.JobFailed, to.Reason)
	}
	h.Snap.Reservations = append(slices.Clone(p.Reservations), held...)
	h.check()
}

// commitView is the harness's state as sched.CheckPlacement reads it.
type commitView struct{ h *Harness }

func (v commitView) Node(id structs.NodeID) *structs.Node {
	for _, n := range v.h.Snap.Nodes {
		if n.Name == id {
			return n
		}
	}
	return nil
}

func (v commitView) TasksOf(id structs.JobID) []*structs.Task {
	var out []*structs.Task
	for _, t := range v.h.Snap.Tasks {
		if t.Job == id {
			out = append(out, t)
		}
	}
	return out
}

func (v commitView) HasTask(id structs.TaskID) bool {
	return slices.ContainsFunc(v.h.Snap.Tasks, func(t *structs.Task) bool { return t.ID == id })
}

func (v commitView) Quota(s structs.Scope) (_, _ structs.ResourceList) {
	return v.h.Snap.Quotas[s], v.h.Snap.Usage[s]
}

// Settle lets every Stopping task stop: preempted jobs return to Pending
// with their attempt raised; a service that lost only some replicas runs
// on with the others (the next cycles place them again).
func (h *Harness) Settle() {
	h.T.Helper()
	requeue := map[structs.JobID]bool{}
	kept := h.Snap.Tasks[:0]
	for _, t := range h.Snap.Tasks {
		if t.State == structs.TaskStopping {
			requeue[t.Job] = true
			h.stopped(t)
			continue
		}
		kept = append(kept, t)
	}
	h.Snap.Tasks = kept
	for _, id := range slices.Sorted(maps.Keys(requeue)) {
		j := h.Snap.Jobs[id]
		if j == nil || j.State.Ended() {
			continue
		}
		if j.Kind == structs.KindService && slices.ContainsFunc(h.Snap.Tasks, func(t *structs.Task) bool {
			return t.Job == id && t.Attempt == j.Attempt
		}) {
			continue
		}
		// Stop any sibling still running: a gang is evicted whole.
		for _, t := range h.Snap.Tasks {
			mustf(!(t.Job == id && t.Attempt == j.Attempt), "task %s of preempted job still live", t.ID)
		}
		j.State, j.Reason = structs.JobPending, structs.ReasonPreempted
		j.Attempt++
		j.Preemptions++
		j.PendingSince = h.Now
	}
	h.check()
}

// Finish ends job id with state s (Succeeded, Failed, Cancelled),
// releasing its tasks and quota.
func (h *Harness) Finish(id string, s structs.JobState) {
	h.T.Helper()
	h.end(structs.JobID(id), s, "")
	h.check()
}

func (h *Harness) end(id structs.JobID, s structs.JobState, reason string) {
	j := h.Snap.Jobs[id]
	require.NotNil(h.T, j, "no job %s", id)
	kept := h.Snap.Tasks[:0]
	for _, t := range h.Snap.Tasks {
		if t.Job != id {
			kept = append(kept, t)
		} else {
			h.stopped(t)
		}
	}
	h.Snap.Tasks = kept
	if j.Charged != nil {
		h.charge(j.ChargedScope, j.Charged, nil)
	}
	j.Charged, j.ChargedScope = nil, ""
	j.State, j.Reason = s, reason
	h.Snap.Reservations = slices.DeleteFunc(slices.Clone(h.Snap.Reservations), func(r sched.Reservation) bool { return r.Job == id })
}

// BindExecutor binds executor Pod pod of spark job id, asking its
// executor's resources, as the coordinator does: sched.PlaceExecutor on
// the current state, then the executor's task (Running, past the job's
// replicas) and the room it takes of what is held for the job's minimum
// executors (sched.TakeHeld).
func (h *Harness) BindExecutor(id, pod string) (sched.TaskPlacement, error) {
	h.T.Helper()
	return h.BindExecutorPod(id, sched.ExecutorPod{Name: pod, Requests: h.Job(id).Spark.ExecutorResources()})
}

// BindExecutorPod is BindExecutor for executor Pod pod as it asks.
func (h *Harness) BindExecutorPod(id string, pod sched.ExecutorPod) (sched.TaskPlacement, error) {
	h.T.Helper()
	j := h.Job(id)
	var driver *structs.Task
	idx := j.Replicas
	for _, t := range h.Tasks(id) {
		if t.Attempt != j.Attempt {
			continue
		}
		if t.Executor == "" && t.State != structs.TaskStopping {
			driver = t
		}
		idx = max(idx, t.Index+1)
	}
	require.NotNil(h.T, driver, "job %s has no live driver", id)
	tp, err := sched.PlaceExecutor(h.Snap, j, driver, pod)
	if err != nil {
		return tp, err
	}
	h.add(&structs.Task{ID: structs.MakeTaskID(j.ID, idx, j.Attempt), Job: j.ID, Index: idx,
		Attempt: j.Attempt, Node: tp.Node, Pool: tp.Pool, Priority: j.Priority, State: structs.TaskRunning,
		Resources: tp.Resources, Accels: tp.Accels, Executor: pod.Name, ScheduledAt: h.Now, StartedAt: h.Now})
	h.Snap.Reservations = sched.TakeHeld(h.Snap.Reservations, j.ID, tp.Node)
	h.check()
	return tp, nil
}

// Held returns the room held for spark job id's minimum executors.
func (h *Harness) Held(id string) []sched.Reservation {
	return sched.HeldRoom(h.Snap.Reservations, structs.JobID(id))
}

// Executors returns the nodes of spark job id's live executors, in
// the order they were bound.
func (h *Harness) Executors(id string) []string {
	var out []string
	for _, t := range h.Tasks(id) {
		if t.Executor != "" && t.State != structs.TaskStopping {
			out = append(out, string(t.Node))
		}
	}
	return out
}

// Running lists the IDs of the running jobs, in order.
func (h *Harness) Running() []string {
	var out []string
	for id, j := range h.Snap.Jobs {
		if j.State == structs.JobRunning {
			out = append(out, string(id))
		}
	}
	slices.Sort(out)
	return out
}

// Job returns the stored job id.
func (h *Harness) Job(id string) *structs.Job {
	j := h.Snap.Jobs[structs.JobID(id)]
	require.NotNil(h.T, j, "no job %s", id)
	return j
}

// Tasks returns job id's tasks holding resources, by replica index.
func (h *Harness) Tasks(id string) []*structs.Task {
	var out []*structs.Task
	for _, t := range h.Snap.Tasks {
		if string(t.Job) == id && t.State.HoldsResources() {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Task) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// NodesOf returns the node of each of job id's tasks, by replica index.
func (h *Harness) NodesOf(id string) []string {
	var out []string
	for _, t := range h.Tasks(id) {
		out = append(out, string(t.Node))
	}
	return out
}

// Usage returns scope s's usage of key k.
func (h *Harness) Usage(s structs.Scope, k structs.ResourceKey) int64 { return h.Snap.Usage[s][k] }

// Why returns the last plan's reason for job id (nil if placed).
func (h *Harness) Why(id string) *sched.Why {
	if h.Last == nil {
		return nil
	}
	return h.Last.Pending[structs.JobID(id)]
}

// Victims lists the jobs the last plan preempted.
func (h *Harness) Victims() []string {
	var out []string
	for _, p := range h.Last.Preemptions {
		out = append(out, string(p.Victim))
	}
	slices.Sort(out)
	return out
}

// UsedAccels returns how many accelerators on node n are held.
func (h *Harness) UsedAccels(n string) int {
	c := 0
	for _, t := range h.Snap.Tasks {
		if string(t.Node) == n && t.State.HoldsResources() {
			c += t.Accels.Count()
		}
	}
	return c
}

func (h *Harness) check() {
	h.T.Helper()
	require.NoError(h.T, sched.CheckInvariants(h.Snap))
	all := append(slices.Clone(h.Snap.Tasks), h.ended...)
	want := sched.RecomputeUsage(h.FairShare, h.FairUsage.Since, h.FairUsage.At, all,
		func(id structs.JobID) *structs.Job { return h.Snap.Jobs[id] }, h.poolProject)
	require.NoError(h.T, sched.CheckUsage(h.FairUsage, want))
}

// Scale changes service id to replicas: down through sched.ScaleDown (the
// chosen tasks stop at once, survivors are re-indexed), up by raising the
// count so the next cycle places the new replicas. The charge follows the
// replica count, as the state machine does.
func (h *Harness) Scale(id string, replicas int) error {
	h.T.Helper()
	j := h.Job(id)
	p, err := sched.ScaleDown(j, h.Tasks(id), replicas) // refuses what the state machine refuses
	if err != nil {
		return err
	}
	if len(p.Stop)+len(p.Reindex) > 0 {
		stop := map[structs.TaskID]bool{}
		for _, t := range p.Stop {
			stop[t] = true
		}
		kept := h.Snap.Tasks[:0]
		for _, t := range h.Snap.Tasks {
			if stop[t.ID] {
				h.stopped(t)
				continue
			}
			if n, ok := p.Reindex[t.ID]; ok {
				t.Index = n
			}
			kept = append(kept, t)
		}
		h.Snap.Tasks = kept
	}
	parked := j.Replicas == 0
	j.Replicas = replicas
	switch {
	case replicas == 0: // parked: Running, nothing to place
		j.State, j.Reason, j.BackoffUntil, j.CrashLoop = structs.JobRunning, "scaled to 0 replicas", time.Time{}, 0
	case parked: // pending again, as at submit
		j.State, j.Reason, j.PendingSince = structs.JobPending, "", h.Now
	}
	if j.Priority == structs.PriorityNormal && !j.PoolOnly {
		inProject := 0
		for _, t := range h.Tasks(id) {
			if t.Pool != "" && t.Pool != structs.PublicPool {
				inProject++
			}
		}
		scope := j.ChargedScope
		if scope == "" {
			scope = j.ChargeScope()
		}
		want := structs.JobCharge(j, structs.Shape{Resources: j.Resources}, replicas-inProject)
		h.charge(scope, j.Charged, want)
		j.Charged, j.ChargedScope = want, ""
		if want != nil {
			j.ChargedScope = scope
		}
	}
	h.check()
	return nil
}
