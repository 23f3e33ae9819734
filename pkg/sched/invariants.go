package sched

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// CheckInvariants checks what must hold at every committed index: no node
// over capacity (counting the room held for spark jobs' minimum
// executors, which only running spark jobs hold, at most their minimum's
// worth), no accelerator in two tasks or given to a task after it
// was quarantined, quota usage equal to the sum of the charges of the
// jobs, never below zero, every gang with 0 or all of its replicas
// placed, every job that requires a topology level with all its tasks
// (a spark job's executors too) in one domain of it, and no persistent volume (a claim in one cluster) mounted
// read-write by two jobs or read-write by one while others read it. It
// returns every violation.
func CheckInvariants(snap *Snapshot) error {
	var errs []error
	nodes := map[structs.NodeID]*structs.Node{}
	for _, n := range snap.Nodes {
		nodes[n.Name] = n
	}
	type use struct {
		cpu, mem int64
		accels   structs.AccelMask
		nacc     int64 // accelerators held, not yet given (spark executors' room)
		devices  map[string]int64
	}
	used := map[structs.NodeID]*use{}
	perJob := map[structs.JobID]int{}   // live replicas of the current attempt, not stopping
	stopping := map[structs.JobID]int{} // replicas of the current attempt being stopped
	for _, t := range snap.Tasks {
		if !t.State.HoldsResources() {
			continue
		}
		n := nodes[t.Node]
		if n == nil {
			errs = append(errs, fmt.Errorf("task %s is on unknown node %s", t.ID, t.Node))
			continue
		}
		u := used[t.Node]
		if u == nil {
			u = &use{devices: map[string]int64{}}
			used[t.Node] = u
		}
		if u.accels&t.Accels != 0 {
			errs = append(errs, fmt.Errorf("node %s: accelerators %v of task %s are already in another task", t.Node, (u.accels&t.Accels).Indices(), t.ID))
		}
		for _, q := range n.Quarantined {
			// A task already on an accelerator when it was quarantined
			// runs until it ends; one placed there later is a violation.
			if q.Accel >= 0 && q.Accel < 64 && t.Accels&(1<<uint(q.Accel)) != 0 && t.ScheduledAt.After(q.Since) {
				errs = append(errs, fmt.Errorf("node %s: task %s was placed on accelerator %d after it was quarantined", t.Node, t.ID, q.Accel))
			}
		}
		if int64(t.Accels.Count()) != t.Resources.Accels {
			errs = append(errs, fmt.Errorf("task %s holds %d accelerators but asks %d", t.ID, t.Accels.Count(), t.Resources.Accels))
		}
		u.accels |= t.Accels
		u.cpu += t.Resources.MilliCPU
		u.mem += t.Resources.Memory
		for d, c := range t.Resources.Devices {
			u.devices[d] += c
		}
		if j := snap.Jobs[t.Job]; j != nil && t.Attempt == j.Attempt && t.Executor == "" { // executors are no replicas
			if t.State == structs.TaskStopping {
				stopping[t.Job]++
			} else {
				perJob[t.Job]++
			}
		}
	}
	// Room held for spark jobs' minimum executors counts as used: only
	// for a spark job that runs, at most its minimum executors' worth.
	held := map[structs.NodeID]*use{}
	heldOf := map[structs.JobID]int{}
	for _, r := range snap.Reservations {
		if r.Kind != ReserveMinExecutors {
			continue
		}
		j := snap.Jobs[r.Job]
		switch {
		case j == nil || j.Spark == nil || (j.State != structs.JobScheduled && j.State != structs.JobRunning):
			errs = append(errs, fmt.Errorf("room held on node %s for the executors of job %s, which is no running spark job", r.Node, r.Job))
			continue
		case nodes[r.Node] == nil:
			errs = append(errs, fmt.Errorf("room held for the executors of job %s on unknown node %s", r.Job, r.Node))
			continue
		}
		if heldOf[r.Job]++; heldOf[r.Job] == j.Spark.MinExecutors()+1 {
			errs = append(errs, fmt.Errorf("job %s holds room for more executors than its minimum (%d)", r.Job, j.Spark.MinExecutors()))
		}
		h := held[r.Node]
		if h == nil {
			h = &use{}
			held[r.Node] = h
		}
		h.cpu += r.Resources.MilliCPU
		h.mem += r.Resources.Memory
		h.nacc += r.Resources.Accels
		if used[r.Node] == nil {
			used[r.Node] = &use{devices: map[string]int64{}}
		}
	}
	for name, u := range used {
		n := nodes[name]
		c := n.Capacity
		h := held[name]
		if h == nil {
			h = &use{}
		}
		if u.cpu+h.cpu > c.MilliCPU || u.mem+h.mem > c.Memory {
			errs = append(errs, fmt.Errorf("node %s over capacity: cpu %d/%d millicores, memory %d/%d bytes (held for spark executors: cpu %d, memory %d)",
				name, u.cpu+h.cpu, c.MilliCPU, u.mem+h.mem, c.Memory, h.cpu, h.mem))
		}
		if c.Accels < 64 && uint64(u.accels)>>uint(c.Accels) != 0 {
			errs = append(errs, fmt.Errorf("node %s: accelerator index beyond its %d accelerators", name, c.Accels))
		}
		if h.nacc > 0 && popcount(u.accels)+h.nacc > c.Accels {
			errs = append(errs, fmt.Errorf("node %s over capacity: %d accelerators in tasks and %d held for spark executors, of %d", name, popcount(u.accels), h.nacc, c.Accels))
		}
		for d, v := range u.devices {
			if v > c.Devices[d] {
				errs = append(errs, fmt.Errorf("node %s over capacity: device %s %d/%d", name, d, v, c.Devices[d]))
			}
		}
	}
	errs = append(errs, volumeInvariant(snap, nodes)...)
	errs = append(errs, topologyInvariant(snap, nodes)...)
	if fs := snap.FairShare; fs != nil {
		for s, p := range fs.Scopes {
			if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
				errs = append(errs, fmt.Errorf("fair-share position of %s is %g: want a finite number, 0 or more", s, p))
			}
		}
	}
	// Quota: usage equals the recomputed sum of charges, never negative.
	sum := map[structs.Scope]structs.ResourceList{}
	for _, j := range snap.Jobs {
		if len(j.Charged) == 0 || j.State.Ended() {
			continue
		}
		if sum[j.ChargedScope] == nil {
			sum[j.ChargedScope] = structs.ResourceList{}
		}
		for k, v := range j.Charged {
			sum[j.ChargedScope][k] += v
		}
	}
	scopes := map[structs.Scope]bool{}
	for s := range sum {
		scopes[s] = true
	}
	for s := range snap.Usage {
		scopes[s] = true
	}
	for s := range scopes {
		keys := map[structs.ResourceKey]bool{}
		for k := range sum[s] {
			keys[k] = true
		}
		for k := range snap.Usage[s] {
			keys[k] = true
		}
		for k := range keys {
			if got, want := snap.Usage[s][k], sum[s][k]; got != want || got < 0 {
				errs = append(errs, fmt.Errorf("quota usage of %s %s is %d, charged jobs sum to %d", s, k, got, want))
			}
		}
	}
	// Gangs: 0 or all replicas of the current attempt placed, counting
	// those that have ended since (Snapshot.Ended) and those stopping. A
	// gang being torn down (a replica ended before all ran: the others are
	// stopped, then it is requeued) stops all that it still holds.
	ids := make([]structs.JobID, 0, len(snap.Jobs))
	for id := range snap.Jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := snap.Jobs[id]
		if !j.IsGang() || j.State.Ended() {
			continue
		}
		n := perJob[id]
		placed := n + stopping[id] + snap.Ended[id]
		want := j.ShapeAt(j.Shape).Replicas
		switch {
		case j.State == structs.JobPending && n != 0,
			j.State == structs.JobScheduled && placed != want:
			errs = append(errs, fmt.Errorf("gang %s (%s) has %d of %d replicas placed", id, j.State, placed, want))
		case j.State == structs.JobScheduled && stopping[id] > 0 && n > 0:
			errs = append(errs, fmt.Errorf("gang %s (%s) stops %d of its replicas and keeps %d", id, j.State, stopping[id], n))
		}
	}
	return errors.Join(errs...)
}

// volumeInvariant checks that each claim of each cluster has at most one
// writer, and no reader while it has one, among the jobs whose tasks hold
// resources (those stopping too: their Pods still mount it).
func volumeInvariant(snap *Snapshot, nodes map[structs.NodeID]*structs.Node) []error {
	type key struct {
		cluster structs.ClusterID
		claim   string
	}
	writers, readers := map[key][]structs.JobID{}, map[key][]structs.JobID{}
	for _, t := range snap.Tasks {
		j, n := snap.Jobs[t.Job], nodes[t.Node]
		if !t.State.HoldsResources() || j == nil || n == nil {
			continue
		}
		for _, v := range j.Volumes {
			k, m := key{n.Cluster, v.Claim}, readers
			if !v.ReadOnly {
				m = writers
			}
			if !slices.Contains(m[k], j.ID) {
				m[k] = append(m[k], j.ID)
			}
		}
	}
	var errs []error
	keys := slices.SortedFunc(maps.Keys(writers), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.claim, b.claim))
	})
	for _, k := range keys {
		w := writers[k]
		others := slices.DeleteFunc(slices.Clone(readers[k]), func(id structs.JobID) bool { return slices.Contains(w, id) })
		if len(w) > 1 || len(others) > 0 {
			errs = append(errs, fmt.Errorf("volume %s in cluster %s: mounted read-write by jobs %v and read-only by %v at once", k.claim, k.cluster, w, others))
		}
	}
	return errs
}

// RecomputeUsage sums, from tasks alone, the fair-share usage that
// Usage keeps as of at, counting from since: each task's rate over the
// time it held resources (from its placement to its end, or to at while
// it holds them; times before since count from since, and a replica
// placed after at counts nothing yet), decayed to at.
// tasks must be every task that held resources since counting began,
// ended ones included; job returns a task's job; poolProject a pool's
// project.
func RecomputeUsage(f *structs.FairShare, since, at time.Time, tasks []*structs.Task,
	job func(structs.JobID) *structs.Job, poolProject func(structs.PoolID) structs.ProjectID) Usage {
	u := Usage{}
	if at.IsZero() {
		return u
	}
	u.Since, u.At = since, at
	for _, t := range tasks {
		j := job(t.Job)
		if j == nil || t.ScheduledAt.IsZero() {
			continue
		}
		end := at
		if !t.State.HoldsResources() {
			end = t.EndedAt
		}
		u.add(f, AccountOf(j, t, poolProject), f.Rate(t.Resources), t.ScheduledAt, later(end, t.ScheduledAt))
	}
	return u
}

// CheckUsage checks that got, the usage kept command by command, equals
// want, the usage recomputed from the tasks (RecomputeUsage): every
// scope's and member's figure within PruneBelow (a figure that small
// may have been forgotten) plus a billionth, none negative or not
// finite.
func CheckUsage(got, want Usage) error {
	var errs []error
	if !got.At.Equal(want.At) || !got.Since.Equal(want.Since) {
		errs = append(errs, fmt.Errorf("usage counted since %s as of %s, recomputed since %s as of %s", got.Since, got.At, want.Since, want.At))
	}
	near := func(what string, g, w float64) {
		if math.IsNaN(g) || math.IsInf(g, 0) || g < -PruneBelow || math.Abs(g-w) > PruneBelow+1e-9*max(math.Abs(g), math.Abs(w)) {
			errs = append(errs, fmt.Errorf("fair-share usage of %s is %g GPU-seconds, its tasks sum to %g", what, g, w))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(union(got.Scopes, want.Scopes))) {
		near(string(s), got.Scopes[s], want.Scopes[s])
	}
	projects := map[structs.ProjectID]bool{}
	for p := range got.Members {
		projects[p] = true
	}
	for p := range want.Members {
		projects[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(projects)) {
		for _, id := range slices.Sorted(maps.Keys(union(got.Members[p], want.Members[p]))) {
			near(fmt.Sprintf("%s in project %s", id, p), got.Members[p][id], want.Members[p][id])
		}
	}
	return errors.Join(errs...)
}

func union[K comparable](a, b map[K]float64) map[K]bool {
	out := make(map[K]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
