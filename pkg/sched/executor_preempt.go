package sched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// An executor Pod of a normal or high spark job that fits nowhere preempts
// low jobs as a one-replica job of its job's priority would (preempt.go),
// on the nodes its job and its Pod allow in its driver's cluster and
// pool. Its job runs, so the room freed is reserved for the executor
// itself (ReserveExecutor, keyed by job and Pod): held while the victims
// (or any task on its node) stop and ExecutorHold after, until the
// executor takes it, or its job stops running.

// execKey names one executor Pod of one job.
type execKey struct {
	job structs.JobID
	pod string
}

// executorsWaiting lists the executor reservations of snap whose job is
// running (Scheduled or Running) and whose executor is not placed yet:
// those that still hold room.
func executorsWaiting(snap *Snapshot) map[execKey]bool {
	var out map[execKey]bool
	for _, r := range snap.Reservations {
		if r.Kind != ReserveExecutor {
			continue
		}
		if j := snap.Jobs[r.Job]; j != nil && j.Spark != nil && (j.State == structs.JobScheduled || j.State == structs.JobRunning) {
			if out == nil {
				out = map[execKey]bool{}
			}
			out[execKey{r.Job, r.Executor}] = true
		}
	}
	if out == nil {
		return nil
	}
	for _, t := range snap.Tasks {
		if t.Executor != "" && t.State.HoldsResources() {
			if j := snap.Jobs[t.Job]; j != nil && t.Attempt == j.Attempt {
				delete(out, execKey{t.Job, t.Executor})
			}
		}
	}
	return out
}

// holdReservations holds snap's reservations that still bind (as
// Schedule keeps them): those of jobs that wait to be placed, those of
// executors that wait (executorsWaiting), and the room held for running
// spark jobs' minimum executors.
func (w *world) holdReservations(snap *Snapshot) {
	waiting := executorsWaiting(snap)
	for _, r := range snap.Reservations {
		switch r.Kind {
		case ReserveExecutor:
			if waiting[execKey{r.Job, r.Executor}] {
				w.hold(r)
			}
			continue
		case ReserveMinExecutors:
			if w.heldLives(r) {
				w.hold(r)
			}
			continue
		}
		if j := snap.Jobs[r.Job]; j != nil && !j.State.Ended() {
			w.hold(r)
		}
	}
}

// PreemptForExecutor finds, for executor Pod pod (pod.Name set) of spark
// job j, whose driver is task driver, when it fits nowhere now
// (PlaceExecutor), the low jobs whose eviction makes room for it: on the
// nodes PlaceExecutor would consider, the node needing the fewest victims,
// then the least resources, then the most recently started; a victim goes
// whole (all its tasks); never a job of j's priority or higher, never for a
// low job's executor, and nothing at all if no node would then take it; a
// low service loses only the replicas needed, and work younger than its
// pool's minimum runtime (at now) is left out, the Pod waiting if only
// such work would make room. It
// returns the preemptions and the reservation that holds the freed room
// for the executor (ReserveExecutor; the state sets Made), or an error
// matching ErrNoRoom saying why it waits: it holds such room already,
// it fits now, or no eviction makes room.
func PreemptForExecutor(snap *Snapshot, j *structs.Job, driver *structs.Task, pod ExecutorPod, now time.Time) ([]Preemption, Reservation, error) {
	if pod.Name == "" {
		return nil, Reservation{}, fmt.Errorf("executor of job %s: no Pod name given", j.ID)
	}
	e, err := newExecutorCtx(snap, j, driver, pod)
	if err != nil {
		return nil, Reservation{}, err
	}
	w, c := e.w, e.c
	w.now = now
	for _, r := range w.holds {
		if r.Kind == ReserveExecutor && r.Job == j.ID && r.Executor == pod.Name {
			return nil, Reservation{}, fmt.Errorf("low-priority jobs on node %s are being stopped to make room for it: %w", r.Node, ErrNoRoom)
		}
	}
	c.setDom(e.doms[len(e.doms)-1]) // the widest it may use
	if w.fitsAll(c, 1) {
		return nil, Reservation{}, fmt.Errorf("an executor of job %s fits now, without preempting: %w", j.ID, ErrNoRoom)
	}
	noRoom := e.noRoom()
	if j.Priority == structs.PriorityLow {
		return nil, Reservation{}, noRoom // a low job preempts nothing
	}
	var chosen []*victim
	var prot *protection
	for _, d := range e.doms {
		if w.lowTasks == 0 || chosen != nil {
			break
		}
		c.setDom(d) // the driver's topology domain first
		if cands := w.candidates(c); len(cands) > 0 {
			old := slices.DeleteFunc(slices.Clone(cands), w.young)
			if len(old) > 0 {
				chosen = w.victimsOneNode(c, old)
			}
			if chosen == nil && prot == nil && len(old) < len(cands) {
				if set := w.victimsOneNode(c, cands); set != nil {
					prot = w.protectedBy(set)
				}
			}
		}
	}
	if chosen == nil {
		msg := strings.TrimSuffix(noRoom.Error(), ": "+ErrNoRoom.Error())
		if prot != nil {
			return nil, Reservation{}, fmt.Errorf("%s, and %s: %w", msg, prot, ErrNoRoom)
		}
		return nil, Reservation{}, fmt.Errorf("%s, and stopping low-priority jobs would not make room: %w", msg, ErrNoRoom)
	}
	for _, v := range chosen {
		w.evict(v)
	}
	as := w.placeReplicas(c, 0, 1, true)
	if len(as) != 1 { // victimsOneNode chose them so that it fits
		return nil, Reservation{}, fmt.Errorf("an executor of job %s fits nowhere after preemption: %w", j.ID, ErrNoRoom)
	}
	r := Reservation{Job: j.ID, Node: w.nodes[as[0].ni].n.Name, Resources: as[0].res, Kind: ReserveExecutor, Executor: pod.Name}
	for _, v := range chosen {
		w.unevict(v)
	}
	return w.preemptions(j.ID, chosen), r, nil
}
