package main

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Contended policies, in output order.
const (
	policyAtomFIFO = "atom-fifo"
)

var contendedPolicies = []string{policyAtom, policyAtomFIFO, policyFirstFit, policyBestFit}

// phase is where a job of the contended replay is.
type phase uint8

const (
	phaseHeld     phase = iota // refused by its tenant's quota: the tenant submits it again
	phasePending               // accepted, waiting to be placed
	phaseRunning               // placed: holds its GPUs
	phaseStopping              // preempted: holds its GPUs until it stops
	phaseDone                  // ran its whole run time
)

// span is a time a job held its GPUs.
type span struct{ From, To time.Duration }

// simJob is one arrival as the replay follows it.
type simJob struct {
	arrival
	*template
	Phase   phase
	Attempt int           // attempts placed so far
	Start   time.Duration // when the current attempt was placed
	First   time.Duration // when it was first placed; -1 before
	Done    time.Duration // when it ended; -1 before
	Held    []span        // times it held its GPUs, attempts in order
	// Lost is each preempted attempt: when its victim stopped and the
	// GPU-seconds it had held (its work lost).
	Lost []lost
}

type lost struct {
	At         time.Duration
	GPUSeconds float64
}

// engine is one policy of the contended replay: it keeps its own view of
// the cluster and decides placements (and, for atom, preemptions).
type engine interface {
	// submit offers job k at now. It returns false when k's tenant's
	// quota refuses it: the tenant keeps it and submits it again later.
	submit(k int, now time.Duration) (bool, error)
	// cycle runs one scheduling cycle at now and returns the jobs it
	// placed and the jobs it preempted (they stop StopGrace later).
	cycle(now time.Duration) (placed, preempted []int, err error)
	// finish ends job k, which has run its run time, at now.
	finish(k int, now time.Duration) error
	// stopped ends job k's preempted attempt at now: it is pending again.
	stopped(k int, now time.Duration) error
}

// event is a job's attempt ending: on its own (finish) or stopped after a
// preemption.
type event struct {
	At      time.Duration
	Job     int
	Attempt int
	Stop    bool
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].At != e[j].At {
		return e[i].At < e[j].At
	}
	return e[i].Job < e[j].Job
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// contendedRun is one replay of the contended trace: one policy, one seed.
type contendedRun struct {
	Policy string
	Seed   uint64
	W      workload
	Jobs   []*simJob
	Engine engine
}

// newEngine returns policy's engine over nodes (atomNodes: the same,
// converted) for jobs of workload w.
func newEngine(policy string, w workload, nodes []node, atomNodes []*structs.Node, jobs []*simJob, quota [tenants]int64, schedule scheduleFunc) (engine, error) {
	if policy == policyAtom || policy == policyAtomFIFO {
		return newStateEngine(policy, atomNodes, jobs, quota, w.weights(), w.MinRuntime, schedule)
	}
	return newFIFOEngine(policy, nodes, jobs, quota)
}

// newJobs makes the replay's jobs of arrivals over templates.
func newJobs(arr []arrival, tmpls []template) []*simJob {
	jobs := make([]*simJob, len(arr))
	for k, a := range arr {
		jobs[k] = &simJob{arrival: a, template: &tmpls[a.Tmpl], First: -1, Done: -1}
	}
	return jobs
}

// run replays the arrivals up to the horizon, a cycle every tick: a job is
// submitted when it arrives (or, held back by its tenant's quota, at each
// tick until accepted), runs its run time once placed, and starts again
// from the beginning when preempted.
func (r *contendedRun) run() (cycles int, err error) {
	var q events
	h := r.W.horizon()
	next := 0               // next arrival
	var held [tenants][]int // per tenant, jobs its quota refused, in arrival order
	submit := func(k int, now time.Duration) (bool, error) {
		ok, err := r.Engine.submit(k, now)
		if err != nil {
			return false, fmt.Errorf("job %d: %w", k, err)
		}
		if ok {
			r.Jobs[k].Phase = phasePending
		}
		return ok, nil
	}
	for now := time.Duration(0); now < h; now += r.W.Tick {
		// Arrivals and ends up to now, in time order.
		for {
			arrive := next < len(r.Jobs) && r.Jobs[next].At <= now
			end := len(q) > 0 && q[0].At <= now
			if !arrive && !end {
				break
			}
			if arrive && (!end || r.Jobs[next].At <= q[0].At) {
				j := r.Jobs[next]
				ok := false
				if len(held[j.Tenant]) == 0 { // else it waits behind them
					if ok, err = submit(next, j.At); err != nil {
						return cycles, err
					}
				}
				if !ok {
					held[j.Tenant] = append(held[j.Tenant], next)
				}
				next++
				continue
			}
			e := heap.Pop(&q).(event)
			j := r.Jobs[e.Job]
			if e.Attempt != j.Attempt || (!e.Stop && j.Phase != phaseRunning) {
				continue // preempted before it finished: its stop ends it
			}
			j.Held = append(j.Held, span{j.Start, e.At})
			if e.Stop {
				j.Lost = append(j.Lost, lost{At: e.At, GPUSeconds: float64(j.GPUs) * (e.At - j.Start).Seconds()})
				j.Phase = phasePending
				err = r.Engine.stopped(e.Job, e.At)
			} else {
				j.Phase, j.Done = phaseDone, e.At
				err = r.Engine.finish(e.Job, e.At)
			}
			if err != nil {
				return cycles, fmt.Errorf("job %d at %s: %w", e.Job, e.At, err)
			}
		}
		// Tenants submit again what their quota refused, oldest first,
		// until one is refused again.
		for t := range held {
			for len(held[t]) > 0 {
				ok, err := submit(held[t][0], now)
				if err != nil {
					return cycles, err
				}
				if !ok {
					break
				}
				held[t] = held[t][1:]
			}
		}
		placed, preempted, err := r.Engine.cycle(now)
		if err != nil {
			return cycles, fmt.Errorf("cycle at %s: %w", now, err)
		}
		cycles++
		for _, k := range placed {
			j := r.Jobs[k]
			j.Phase, j.Start = phaseRunning, now
			j.Attempt++
			if j.First < 0 {
				j.First = now
			}
			heap.Push(&q, event{At: now + j.Run, Job: k, Attempt: j.Attempt})
		}
		for _, k := range preempted {
			j := r.Jobs[k]
			j.Phase = phaseStopping
			heap.Push(&q, event{At: now + r.W.StopGrace, Job: k, Attempt: j.Attempt, Stop: true})
		}
	}
	// Jobs holding GPUs at the horizon held them until then.
	for _, j := range r.Jobs {
		if j.Phase == phaseRunning || j.Phase == phaseStopping {
			j.Held = append(j.Held, span{j.Start, h})
		}
	}
	return cycles, nil
}
