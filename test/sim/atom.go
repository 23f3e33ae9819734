package main

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// scheduleFunc is the scheduling core's entry point (sched.Schedule).
type scheduleFunc func(*sched.Snapshot, sched.Input) *sched.Plan

// simNow is the fixed clock of every decision: no job waits, so no pending
// ladder or timeout applies.
var simNow = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

// simOwner owns every replayed job; its public-pool quota is unlimited so
// quota never decides a placement.
const simOwner structs.UserID = "sim"

// atomPolicy places each task as a one-replica, normal-priority command job
// through the scheduling core. The snapshot grows as tasks are placed: each
// call sees the nodes and every task placed so far (Tasks is appended to,
// never copied) and the quota usage their jobs charge. Snapshot.Jobs holds
// only the job being decided: placed jobs never become pending again and
// have no affinity, so their records cannot change a decision, and leaving
// them out halves the cost of a call (on every rebuild the core indexes the
// live tasks of each job it is given). A job that does not fit fails and is
// dropped.
//
// The policy applies no rule of its own. It checks the core's plans only for
// consistency (node exists, capacity, accelerator indices, accepted model)
// and reports a broken plan as an error.
type atomPolicy struct {
	schedule scheduleFunc
	seed     uint64
	snap     *sched.Snapshot
	scope    structs.Scope
	byName   map[structs.NodeID]int
	nodes    []*structs.Node
	used     []used // per node, from the plans' allocations
	alloc    int64
	next     int

	Calls    int
	CallTime time.Duration
	// Why counts, per reason class, the tasks the core did not place.
	Why map[string]int
}

// used is what plans allocated on a node.
type used struct {
	MilliCPU, Memory, GPUs int64
	Accels                 structs.AccelMask
}

// newAtom returns the atom policy over nodes, placing with schedule.
func newAtom(nodes []*structs.Node, schedule scheduleFunc, seed uint64) *atomPolicy {
	scope := structs.UserScope(simOwner)
	unlimited := int64(math.MaxInt64 / 4)
	a := &atomPolicy{
		schedule: schedule,
		seed:     seed,
		scope:    scope,
		byName:   make(map[structs.NodeID]int, len(nodes)),
		nodes:    nodes,
		used:     make([]used, len(nodes)),
		Why:      map[string]int{},
		snap: &sched.Snapshot{
			Nodes: nodes,
			Quotas: map[structs.Scope]structs.ResourceList{scope: {
				structs.KeyCPU: unlimited, structs.KeyMemory: unlimited, structs.KeyGPUAny: unlimited,
			}},
			Usage: map[structs.Scope]structs.ResourceList{scope: {}},
			Jobs:  map[structs.JobID]*structs.Job{},
		},
	}
	for i, n := range nodes {
		a.byName[n.Name] = i
	}
	return a
}

func (a *atomPolicy) allocatedGPUs() int64 { return a.alloc }

func (a *atomPolicy) freeGPUs() []int64 {
	out := make([]int64, len(a.nodes))
	for i, n := range a.nodes {
		out[i] = n.Capacity.Accels - a.used[i].GPUs
	}
	return out
}

// job returns the atom job for r, submitted (and charged) now.
func (a *atomPolicy) job(r *request) *structs.Job {
	a.next++
	j := &structs.Job{
		ID:       structs.JobID(fmt.Sprintf("sim-%06d", a.next)),
		Name:     r.Name,
		Kind:     structs.KindCommand,
		Owner:    simOwner,
		Priority: structs.PriorityNormal,
		Replicas: 1,
		Resources: structs.Resources{
			MilliCPU: r.MilliCPU,
			Memory:   r.Memory,
			Accels:   r.GPUs, // AccelType "": any type the selector allows
		},
		Selector:     r.selector(),
		State:        structs.JobPending,
		SubmitTime:   simNow,
		PendingSince: simNow,
		ChargedScope: a.scope,
	}
	j.Charged = structs.Charge(j.ShapeAt(0))
	return j
}

func (a *atomPolicy) place(r *request) (bool, error) {
	j := a.job(r)
	a.snap.Index++
	a.snap.Jobs[j.ID] = j // only while it is pending; see atomPolicy
	defer delete(a.snap.Jobs, j.ID)
	a.charge(j.Charged, 1)

	start := time.Now()
	plan, err := a.call(j)
	a.CallTime += time.Since(start)
	a.Calls++
	if err != nil {
		return false, fmt.Errorf("job %s (%s): %w", j.ID, r.Name, err)
	}
	if len(plan.Preemptions) > 0 {
		return false, fmt.Errorf("job %s (%s): plan preempts %s although no job is low priority", j.ID, r.Name, plan.Preemptions[0].Victim)
	}
	var pl *sched.Placement
	for i := range plan.Placements {
		p := &plan.Placements[i]
		if p.Job != j.ID {
			return false, fmt.Errorf("plan places unknown job %s", p.Job)
		}
		pl = p
	}
	if pl == nil {
		a.charge(j.Charged, -1)
		a.Why[whyClass(plan.Pending[j.ID])]++
		return false, nil
	}
	if len(pl.Tasks) != 1 {
		return false, fmt.Errorf("job %s (%s): plan places %d replicas of 1", j.ID, r.Name, len(pl.Tasks))
	}
	for _, tp := range pl.Tasks {
		if err := a.check(r, tp); err != nil {
			return false, fmt.Errorf("job %s (%s): %w", j.ID, r.Name, err)
		}
		a.snap.Tasks = append(a.snap.Tasks, &structs.Task{
			ID:          structs.MakeTaskID(j.ID, tp.Index, 0),
			Job:         j.ID,
			Index:       tp.Index,
			Node:        tp.Node,
			Pool:        tp.Pool,
			Priority:    j.Priority,
			State:       structs.TaskRunning,
			Resources:   tp.Resources,
			Accels:      tp.Accels,
			ScheduledAt: simNow,
			StartedAt:   simNow,
		})
		a.alloc += tp.Resources.Accels
	}
	if pl.Charge != nil {
		a.charge(j.Charged, -1)
		j.Charged = pl.Charge
		a.charge(j.Charged, 1)
	}
	return true, nil
}

// call runs the core on the snapshot for the one pending job j.
func (a *atomPolicy) call(j *structs.Job) (plan *sched.Plan, err error) {
	return safeSchedule(a.schedule, a.snap, sched.Input{Pending: []*structs.Job{j}, Now: simNow, Seed: a.seed})
}

// safeSchedule runs schedule. A panic in the core is returned as an
// error, so the replay stops with the failing input identified.
func safeSchedule(schedule scheduleFunc, snap *sched.Snapshot, in sched.Input) (plan *sched.Plan, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("Schedule panicked: %v\n%s", v, debug.Stack())
		}
	}()
	plan = schedule(snap, in)
	if plan == nil {
		return nil, errors.New("Schedule returned no plan")
	}
	return plan, nil
}

// charge adds sign × l to the sim scope's quota usage.
func (a *atomPolicy) charge(l structs.ResourceList, sign int64) {
	u := a.snap.Usage[a.scope]
	for k, v := range l {
		u[k] += sign * v
	}
}

// check verifies one task placement of r against the nodes and what earlier
// plans allocated, and records it.
func (a *atomPolicy) check(r *request, tp sched.TaskPlacement) error {
	i, ok := a.byName[tp.Node]
	if !ok {
		return fmt.Errorf("placed on unknown node %q", tp.Node)
	}
	n, u, res := a.nodes[i], &a.used[i], tp.Resources
	switch {
	case res.Accels != r.GPUs || int64(tp.Accels.Count()) != r.GPUs:
		return fmt.Errorf("node %s: allocated %d GPUs (mask %b) for %d asked", n.Name, res.Accels, tp.Accels, r.GPUs)
	case tp.Accels&u.Accels != 0:
		return fmt.Errorf("node %s: GPUs %v already allocated", n.Name, (tp.Accels & u.Accels).Indices())
	case tp.Accels != 0 && tp.Accels>>uint(n.Capacity.Accels) != 0:
		return fmt.Errorf("node %s: GPU indices %v beyond its %d GPUs", n.Name, tp.Accels.Indices(), n.Capacity.Accels)
	case res.MilliCPU < r.MilliCPU || res.Memory < r.Memory:
		return fmt.Errorf("node %s: allocated %s for a request of cpu=%dm memory=%d", n.Name, res, r.MilliCPU, r.Memory)
	case u.MilliCPU+res.MilliCPU > n.Capacity.MilliCPU || u.Memory+res.Memory > n.Capacity.Memory:
		return fmt.Errorf("node %s over capacity: %s more on cpu=%dm memory=%d used of %s", n.Name, res, u.MilliCPU, u.Memory, n.Capacity)
	case len(r.Models) > 0 && !slices.Contains(r.Models, n.Tags[modelTag]):
		return fmt.Errorf("node %s of model %q is not one of %v", n.Name, n.Tags[modelTag], r.Models)
	}
	u.MilliCPU += res.MilliCPU
	u.Memory += res.Memory
	u.GPUs += res.Accels
	u.Accels |= tp.Accels
	return nil
}

// number matches the figures inside a filter reason ("binding 12 CPU and
// 48Gi memory per accelerator").
var number = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?[a-zA-Z]*`)

// whyClass names the kind of reason the core gave for not placing a job,
// with figures replaced by N, so failures can be tallied.
func whyClass(w *sched.Why) string {
	if w == nil {
		return "no reason given"
	}
	var parts []string
	if w.NeverFits {
		parts = append(parts, "never fits")
	} else {
		parts = append(parts, "does not fit now")
	}
	if w.Fragmentation != nil {
		parts = append(parts, "fragmentation")
	}
	if w.Quota != nil {
		parts = append(parts, "quota")
	}
	reasons := make([]string, 0, len(w.Filtered))
	for _, c := range w.Filtered {
		reasons = append(reasons, number.ReplaceAllString(c.Reason, "N"))
	}
	slices.Sort(reasons)
	reasons = slices.Compact(reasons)
	if len(reasons) > 0 {
		parts = append(parts, "filtered: "+strings.Join(reasons, ", "))
	}
	return strings.Join(parts, "; ")
}
