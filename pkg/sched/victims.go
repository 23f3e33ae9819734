package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// victim is low-priority work whose eviction is being considered: a whole
// job, or one replica of a service.
type victim struct {
	job     *structs.Job
	tasks   []int32 // the tasks that stop: every live task of a job (a gang goes whole), or one replica
	held    []int32 // nodes of the room held for its minimum executors (a spark job's): freed with it
	replica bool    // one replica of a service: the service keeps the others
	started time.Time
	accels  int64
	cpu     int64
	// work is what evicting it loses: accelerator-seconds run in this
	// attempt (seconds for tasks without accelerators).
	work int64
	// until is when its pool's minimum runtime ends (zero: none); before
	// then it is a victim only if no other choice exists (and then not
	// at all: the preemptor waits).
	until time.Time
	// minRun is that minimum runtime.
	minRun time.Duration
}

// young reports whether v has run less than its pool's minimum runtime.
func (w *world) young(v *victim) bool { return v.until.After(w.now) }

// candidates lists low work with live tasks, or room held for a spark
// job's minimum executors, on nodes c (or the executors placed with it)
// may use: whole jobs, and each replica of a low service (unless the
// cycle asks for whole services: Input.WholeServices). Least work lost
// first.
func (w *world) candidates(c *jobCtx) []*victim {
	byJob := map[structs.JobID]*victim{}
	byTask := map[int32]bool{}
	var out []*victim
	add := func(j *structs.Job) {
		if j == nil || j.Priority != structs.PriorityLow || w.victim[j.ID] || w.off[j.ID] || byJob[j.ID] != nil {
			return
		}
		v := w.victimOf(j)
		byJob[j.ID] = v
		out = append(out, v)
	}
	scan := func(c *jobCtx) {
		for _, lvl := range c.levels {
			for _, gi := range lvl {
				if w.groups[gi].low == 0 {
					continue
				}
				for _, ni := range w.groups[gi].nodes {
					nd := &w.nodes[ni]
					if len(nd.tasks)+len(nd.holds) == 0 || w.fails(c, ni, askRoom) != rOK {
						continue
					}
					for _, k := range nd.tasks {
						wt := &w.tasks[k]
						switch {
						case wt.off || wt.t.Priority != structs.PriorityLow:
						case w.byReplica(wt.job):
							if !byTask[k] && !w.victim[wt.t.Job] && wt.t.State != structs.TaskStopping && !w.stopped[k] {
								byTask[k] = true
								out = append(out, w.replicaVictim(k))
							}
						default:
							add(wt.job)
						}
					}
					for _, h := range nd.holds {
						if r := &w.holds[h]; r.Kind == ReserveMinExecutors {
							add(w.snap.Jobs[r.Job])
						}
					}
				}
			}
		}
	}
	scan(c)
	if c.exec != nil {
		scan(c.exec)
	}
	// Least work lost first: most recently started, then smallest, then
	// ID (a service's replicas highest index first: the last added).
	slices.SortFunc(out, func(a, b *victim) int {
		if c := b.started.Compare(a.started); c != 0 {
			return c
		}
		if a.accels != b.accels {
			return cmp.Compare(a.accels, b.accels)
		}
		if a.cpu != b.cpu {
			return cmp.Compare(a.cpu, b.cpu)
		}
		return cmp.Or(cmp.Compare(a.job.ID, b.job.ID), cmp.Compare(w.index(b), w.index(a)))
	})
	return out
}

// index is the replica index of v's first task (-1 if it has none).
func (w *world) index(v *victim) int {
	if len(v.tasks) == 0 {
		return -1
	}
	return w.tasks[v.tasks[0]].t.Index
}

// byReplica reports whether low job j loses replicas one by one: a
// service, unless the cycle asks for whole services.
func (w *world) byReplica(j *structs.Job) bool {
	return j != nil && j.Kind == structs.KindService && !w.wholeServices
}

// victimOf is job j as a victim: every live task of it.
func (w *world) victimOf(j *structs.Job) *victim {
	v := &victim{job: j}
	for _, tk := range w.liveTasks(j.ID) {
		w.addTask(v, tk)
	}
	for _, r := range w.holds {
		if r.Kind == ReserveMinExecutors && r.Job == j.ID {
			if ni, ok := w.byName[r.Node]; ok {
				v.held = append(v.held, ni)
				v.accels += r.Resources.Accels
				v.cpu += r.Resources.MilliCPU
			}
		}
	}
	return v
}

// replicaVictim is live task k, a replica of a low service, as a victim.
func (w *world) replicaVictim(k int32) *victim {
	v := &victim{job: w.tasks[k].job, replica: true}
	w.addTask(v, k)
	return v
}

// addTask adds task k to victim v: what it holds, the work it would lose
// and how long its pool protects it.
func (w *world) addTask(v *victim, k int32) {
	t := w.tasks[k].t
	v.tasks = append(v.tasks, k)
	v.accels += popcount(t.Accels)
	v.cpu += t.Resources.MilliCPU
	start := t.StartedAt
	if t.ScheduledAt.After(start) {
		start = t.ScheduledAt
	}
	if start.After(v.started) {
		v.started = start
	}
	if !t.StartedAt.IsZero() && w.now.After(t.StartedAt) {
		v.work += int64(w.now.Sub(t.StartedAt)/time.Second) * max(1, popcount(t.Accels))
	}
	if d := w.minRuntime(t.Pool); d > 0 {
		v.minRun = max(v.minRun, d)
		if u := start.Add(d); u.After(v.until) {
			v.until = u
		}
	}
}

// minRuntime is pool p's minimum runtime (0: none).
func (w *world) minRuntime(p structs.PoolID) time.Duration {
	i, ok := w.poolIdx[p]
	if !ok {
		i = 0 // "": the public pool
	}
	return w.pools[i].MinRuntime.D()
}

// liveTasks lists every task of job id that holds resources and is not
// already being stopped.
func (w *world) liveTasks(id structs.JobID) []int32 {
	var out []int32
	for k := range w.tasks {
		wt := &w.tasks[k]
		if !wt.off && wt.t.Job == id && wt.t.State != structs.TaskStopping {
			out = append(out, int32(k))
		}
	}
	return out
}

func (w *world) evict(v *victim) {
	for _, k := range v.tasks {
		w.removeTask(k)
	}
	if len(v.held) > 0 {
		if w.off == nil {
			w.off = map[structs.JobID]bool{}
		}
		w.off[v.job.ID] = true
	}
}

func (w *world) unevict(v *victim) {
	for _, k := range v.tasks {
		w.restoreTask(k)
	}
	delete(w.off, v.job.ID)
}

// cost is what evicting a set loses, compared in order: jobs touched,
// work run (accelerator-seconds), accelerators, CPU. Work comes before
// resources: freeing more than needed loses nothing (the rest is free
// for others), stopping older work loses what it ran. Earlier releases
// (resourcesFirst) compared accelerators and CPU before work.
type cost [4]int64

func (w *world) setCost(set []*victim) cost {
	var jobs, accels, cpu, work int64
	for i, v := range set {
		if !slices.ContainsFunc(set[:i], func(o *victim) bool { return o.job.ID == v.job.ID }) {
			jobs++
		}
		accels += v.accels
		cpu += v.cpu
		work += v.work
	}
	if w.resourcesFirst {
		return cost{jobs, accels, cpu, work}
	}
	return cost{jobs, work, accels, cpu}
}

func (a cost) less(b cost) bool { return slices.Compare(a[:], b[:]) < 0 }

// protection is why a preemptor waits: the only victims that would make
// it fit include work younger than its pool's minimum runtime.
type protection struct {
	job    structs.JobID
	minRun time.Duration
	until  time.Time // the earliest it may be preempted
	now    time.Time // of the cycle that found it
}

// protectedBy is the young victim of set protected longest.
func (w *world) protectedBy(set []*victim) *protection {
	var p *protection
	for _, v := range set {
		if w.young(v) && (p == nil || v.until.After(p.until)) {
			p = &protection{job: v.job.ID, minRun: v.minRun, until: v.until, now: w.now}
		}
	}
	return p
}

func (p *protection) String() string {
	return fmt.Sprintf("preempting would stop job %s before its pool's minimum runtime of %s; earliest at %s",
		p.job, shortDuration(p.minRun), stamp(p.until, p.now))
}

// shortDuration is d as people write it: 10m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
