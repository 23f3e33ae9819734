package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Bounds on the event history, so the state and its snapshots stay
// bounded: each job keeps its newest MaxJobEvents events (older ones are
// dropped and counted), and the cluster its newest MaxRecentEvents. A
// job's events go with the job when it expires.
const (
	MaxJobEvents    = 100
	MaxRecentEvents = 1000
	maxEventMessage = 512 // bytes; longer messages are cut
)

// JobEvents is one job's event history, oldest first.
type JobEvents struct {
	Events []structs.Event `json:"events"`
	// Dropped counts the older events no longer kept.
	Dropped int `json:"dropped,omitempty"`
}

// Event slices are append-only: a Clone shares them and sees only the
// events it had (appends write past its length; dropping the oldest
// re-slices), so recording needs no copy.

// record appends e to its job's history and to the cluster's recent
// events, numbering it. Call it only from deterministic code paths (never
// while ranging over a map), so every server records the same sequence.
func (s *State) record(e structs.Event) {
	s.EventSeq++
	e.Seq = s.EventSeq
	e.Message = cut(e.Message, maxEventMessage)
	if j := s.Jobs[e.Job]; j != nil && e.Task == "" {
		e.Attempt = j.Attempt // a job's event is of its current attempt; a task's, of the task's own
	}
	h := s.Events[e.Job]
	h.Events = append(h.Events, e)
	if n := len(h.Events) - MaxJobEvents; n > 0 {
		h.Events = h.Events[n:]
		h.Dropped += n
	}
	s.Events[e.Job] = h
	s.Recent = append(s.Recent, e)
	if n := len(s.Recent) - MaxRecentEvents; n > 0 {
		s.Recent = s.Recent[n:]
	}
}

// jobEvent records an event of job id, at now or, when an event the job
// already has carries a later time, at that time: a job's event follows
// what caused it, which is recorded first, in time order too. (A task's
// event carries its node's clock: an outage's stops reported last may
// read earlier than the first one, whose Lost started the restart.)
func (s *State) jobEvent(now time.Time, id structs.JobID, typ structs.EventType, format string, a ...any) {
	for _, e := range s.Events[id].Events {
		if e.Time.After(now) {
			now = e.Time
		}
	}
	s.record(structs.Event{Time: now, Job: id, Type: typ, Message: fmt.Sprintf(format, a...)})
}

// taskEventOf is an event of task t (its job, attempt, replica and node).
func taskEventOf(now time.Time, t *structs.Task, typ structs.EventType, format string, a ...any) structs.Event {
	e := structs.Event{Time: now, Job: t.Job, Type: typ, Attempt: t.Attempt, Task: t.ID, Node: t.Node, Message: fmt.Sprintf(format, a...)}
	if t.Executor == "" {
		i := t.Index
		e.Replica = &i
	}
	return e
}

// forgetEvents drops the history of the jobs in gone and their events
// among the recent ones (JobsExpire).
func (s *State) forgetEvents(gone map[structs.JobID]bool) {
	for id := range gone {
		delete(s.Events, id)
	}
	if !slices.ContainsFunc(s.Recent, func(e structs.Event) bool { return gone[e.Job] }) {
		return
	}
	// A new slice: a Clone may share the old one.
	kept := make([]structs.Event, 0, len(s.Recent))
	for _, e := range s.Recent {
		if !gone[e.Job] {
			kept = append(kept, e)
		}
	}
	s.Recent = kept
}

// replicaName names task t for events: "replica 2", or "executor POD".
func replicaName(t *structs.Task) string {
	if t.Executor != "" {
		return "executor " + t.Executor
	}
	return fmt.Sprintf("replica %d", t.Index)
}

// taskEnded records the end of task t (already stored with its end) as
// reported by e: Stopped when the coordinator had asked it to stop
// (stop), else Lost, Succeeded or Failed.
func (s *State) taskEnded(t *structs.Task, e structs.TaskEvent, stop structs.StopReason, stopping bool) {
	code := e.ExitCode
	var ev structs.Event
	switch {
	case stopping && e.State != structs.TaskLost:
		ev = taskEventOf(e.Time, t, structs.EventStopped, "%s stopped (%s) with exit code %d%s", replicaName(t), stop, code, suffix(e.Message))
	case e.State == structs.TaskLost:
		ev = taskEventOf(e.Time, t, structs.EventLost, "%s %s", replicaName(t), describeExit(e))
		s.record(ev)
		return
	case e.State == structs.TaskSucceeded:
		ev = taskEventOf(e.Time, t, structs.EventSucceeded, "%s exited 0", replicaName(t))
	default:
		ev = taskEventOf(e.Time, t, structs.EventFailed, "%s %s", replicaName(t), describeExit(e))
		if e.Reason != "" {
			ev.Message = fmt.Sprintf("%s failed: %s%s", replicaName(t), e.Reason, suffix(e.Message))
		}
	}
	ev.ExitCode = &code
	s.record(ev)
}

// gpuSeconds is the accelerator time task t has run by now (0 if it never
// started).
func gpuSeconds(t *structs.Task, now time.Time) int64 {
	if t.StartedAt.IsZero() || !now.After(t.StartedAt) {
		return 0
	}
	return int64(t.Accels.Count()) * int64(now.Sub(t.StartedAt)/time.Second)
}

// placedEvent records task t placed (shape says which fallback shape, if
// any).
func (s *State) placedEvent(now time.Time, t *structs.Task, shape string) {
	accels := ""
	if t.Accels != 0 {
		accels = " (" + accelList(t.Accels) + ")"
	}
	pool := ""
	if t.Pool != "" && t.Pool != structs.PublicPool {
		pool = ", pool " + string(t.Pool)
	}
	ev := taskEventOf(now, t, structs.EventPlaced, "%s placed on %s: %s%s%s%s", replicaName(t), t.Node, t.Resources, accels, pool, shape)
	ev.Accelerators = t.Accels.Indices()
	if len(ev.Accelerators) == 0 {
		ev.Accelerators = nil
	}
	s.record(ev)
}

// scaledEvent records service scale c of a service that had from
// replicas, stopping stopped of its tasks.
func (s *State) scaledEvent(c *ServiceScale, from, stopped int) {
	msg := fmt.Sprintf("scaled from %d to %d replicas", from, c.Replicas)
	if c.By != "" {
		msg += " by " + string(c.By)
	}
	if stopped > 0 {
		msg += fmt.Sprintf("; stopping %d task(s)", stopped)
	}
	if c.Replicas == 0 {
		msg += "; parked (" + ParkedReason + ")"
	}
	s.jobEvent(c.Now, c.ID, structs.EventScaled, "%s", msg)
}

// projectSuffix is " in project P", or "" for none.
func projectSuffix(p structs.ProjectID) string {
	if p == "" {
		return ""
	}
	return " in project " + string(p)
}
