package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// stateEngine is atom in the contended replay: the coordinator's
// replicated state (coordinator/state) changed only by the commands its
// leader and agents send (JobSubmit, PlanCommit, TaskUpdate, JobsExpire,
// times inside them), and the scheduling core deciding each cycle on the
// state's snapshot and pending jobs, as the leader's cycle does. The
// replay applies no rule of its own: quota, order, placement, preemption
// and requeueing are the state's and the core's.
type stateEngine struct {
	st       *state.State
	schedule scheduleFunc
	index    uint64
	fifo     bool // atom-fifo: no fair-share order
	jobs     []*simJob
	ids      map[structs.JobID]int
	task     []structs.TaskID // per job, the task of its current attempt
	cycles   int

	Calls    int
	CallTime time.Duration
}

// simStart is the wall-clock time of the contended replay's start.
var simStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// expireEvery is how many cycles pass between JobsExpire commands, which
// drop ended jobs from the state as the leader's retention loop does.
const expireEvery = 120

// newStateEngine returns atom (policy atom) or atom-fifo over nodes, each
// tenant with its quota and fair-share weight. Under atom the public pool
// has minimum runtime minRun (0: none).
func newStateEngine(policy string, nodes []*structs.Node, jobs []*simJob, quota [tenants]int64, weights [tenants]float64, minRun time.Duration, schedule scheduleFunc) (*stateEngine, error) {
	e := &stateEngine{st: state.New(), schedule: schedule, fifo: policy == policyAtomFIFO, jobs: jobs,
		ids: make(map[structs.JobID]int, len(jobs)), task: make([]structs.TaskID, len(jobs))}
	for _, n := range nodes {
		if _, err := e.apply(&state.NodeUpsert{Node: n}); err != nil {
			return nil, err
		}
	}
	if !e.fifo && minRun > 0 {
		pub := &structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(minRun)}
		if _, err := e.apply(&state.PoolUpsert{Pool: pub}); err != nil {
			return nil, err
		}
	}
	for t := range tenants {
		q := &structs.Quota{Scope: structs.UserScope(tenantName(t)), Limits: structs.ResourceList{structs.KeyGPUAny: quota[t]}, Weight: weights[t]}
		if _, err := e.apply(&state.QuotaSet{Quota: q}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *stateEngine) apply(c state.Command) (any, error) {
	e.index++
	return e.st.Apply(e.index, c)
}

// jobID names job k.
func jobID(k int) structs.JobID { return structs.JobID(fmt.Sprintf("j%06d", k)) }

func (e *stateEngine) submit(k int, now time.Duration) (bool, error) {
	j := e.jobs[k]
	id := jobID(k)
	_, err := e.apply(&state.JobSubmit{Job: j.job(id, tenantName(j.Tenant)), Now: simStart.Add(now)})
	switch {
	case errors.Is(err, sched.ErrQuotaExceeded):
		return false, nil
	case err != nil:
		return false, err
	}
	e.ids[id] = k
	return true, nil
}

func (e *stateEngine) cycle(now time.Duration) (placed, preempted []int, err error) {
	at := simStart.Add(now)
	e.cycles++
	if e.cycles%expireEvery == 0 {
		if _, err := e.apply(&state.JobsExpire{Before: at}); err != nil {
			return nil, nil, err
		}
	}
	// The leader accrues fair-share usage every 30 s (its default
	// UsageEvery), the replay's tick.
	if _, err := e.apply(&state.UsageAccrue{Now: at}); err != nil {
		return nil, nil, err
	}
	snap, pending := e.st.Snapshot(), e.st.Pending()
	if e.fifo {
		snap.FairShare = nil // oldest first within a priority
	}
	if len(pending) == 0 && len(snap.Reservations) == 0 {
		return nil, nil, nil
	}
	start := time.Now()
	// atom-fifo: the victim choice from before: a low service is a victim
	// whole, and sets are ranked by what they free before the work they
	// lose.
	in := sched.Input{Pending: pending, Now: at, Seed: snap.Index, WholeServices: e.fifo, ResourcesBeforeWork: e.fifo}
	plan, err := safeSchedule(e.schedule, snap, in)
	e.CallTime += time.Since(start)
	e.Calls++
	if err != nil {
		return nil, nil, err
	}
	plan.Pending = nil
	if len(plan.Placements) == 0 && len(plan.Preemptions) == 0 && len(plan.Timeouts) == 0 {
		return nil, nil, nil
	}
	res, err := e.apply(&state.PlanCommit{Plan: plan, Now: at})
	if err != nil {
		return nil, nil, err
	}
	if cr := res.(state.CommitResult); len(cr.Rejected) > 0 {
		return nil, nil, fmt.Errorf("the state rejected a plan made on it: %s: %s", cr.Rejected[0].Job, cr.Rejected[0].Reason)
	}
	if len(plan.Timeouts) > 0 {
		return nil, nil, fmt.Errorf("job %s timed out pending", plan.Timeouts[0].Job)
	}
	// The agents report the new tasks running at once.
	var started []structs.TaskEvent
	for _, pl := range plan.Placements {
		k := e.ids[pl.Job]
		if len(pl.Tasks) != 1 {
			return nil, nil, fmt.Errorf("job %s: %d replicas placed of 1", pl.Job, len(pl.Tasks))
		}
		e.task[k] = pl.Tasks[0].TaskID(e.st.Jobs[pl.Job])
		started = append(started, structs.TaskEvent{Task: e.task[k], State: structs.TaskRunning, Time: at})
		placed = append(placed, k)
	}
	if len(started) > 0 {
		if _, err := e.apply(&state.TaskUpdate{Events: started}); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range plan.Preemptions {
		preempted = append(preempted, e.ids[p.Victim])
	}
	return placed, preempted, nil
}

func (e *stateEngine) finish(k int, now time.Duration) error {
	return e.end(k, structs.TaskEvent{State: structs.TaskSucceeded}, now, structs.JobSucceeded)
}

func (e *stateEngine) stopped(k int, now time.Duration) error {
	return e.end(k, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 143, Message: "terminated"}, now, structs.JobPending)
}

// end reports job k's task ended as ev says and checks the job is then
// in state want.
func (e *stateEngine) end(k int, ev structs.TaskEvent, now time.Duration, want structs.JobState) error {
	ev.Task, ev.Time = e.task[k], simStart.Add(now)
	if _, err := e.apply(&state.TaskUpdate{Events: []structs.TaskEvent{ev}}); err != nil {
		return err
	}
	if j := e.st.Jobs[jobID(k)]; j == nil || j.State != want {
		return fmt.Errorf("task %s ended %s: job is %v, not %s", ev.Task, ev.State, j, want)
	}
	return nil
}
