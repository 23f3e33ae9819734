package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// MaxRestarts bounds how often a batch job with restartPolicy OnFailure is
// restarted after a replica fails: structs.MaxRestarts, the budget job
// status and job why show.
const MaxRestarts = structs.MaxRestarts

// MaxUnstartedRequeues bounds the requeues of one job after a task was
// lost before it ran; a further such loss is an ordinary failure, so a
// job whose tasks never start cannot cycle for ever.
const MaxUnstartedRequeues = 3

// TaskUpdate applies task events in order. Events for unknown or already
// ended tasks are ignored (a late or repeated report).
type TaskUpdate struct {
	Events []structs.TaskEvent `json:"events"`
}

func (*TaskUpdate) Type() MsgType { return MsgTaskUpdate }

func (c *TaskUpdate) apply(s *State) (any, error) {
	for _, e := range c.Events {
		switch e.State {
		case structs.TaskRunning, structs.TaskSucceeded, structs.TaskFailed, structs.TaskLost:
		default:
			return nil, invalidf("task %s: state %q is not allowed: use Running, Succeeded, Failed or Lost", e.Task, e.State)
		}
		if err := checkEvent(e); err != nil {
			return nil, err
		}
	}
	for _, e := range c.Events {
		s.taskEvent(e)
	}
	s.rolloutAfter(c.Events)
	return nil, nil
}

func (s *State) taskEvent(e structs.TaskEvent) {
	t := s.Tasks[e.Task]
	if t == nil || !t.State.HoldsResources() {
		return
	}
	if e.Reason == structs.ReasonStoppedOutside {
		e = stoppedOutside(t, e)
	}
	j := s.Jobs[t.Job]
	switch {
	case e.Reason == structs.ReasonShutdown:
		s.interrupted(j, t, e, structs.TaskEvent{State: structs.TaskStopped, Message: structs.ShutdownMessage},
			structs.EventStopped, structs.ShutdownMessage, structs.ShutdownMessage)
		return
	case e.Reason == structs.ReasonDisconnected && t.State == structs.TaskStopping:
		e.Reason = "" // the end of the coordinator's own stop
	case e.Reason == structs.ReasonDisconnected:
		end := structs.TaskEvent{State: structs.TaskLost, ExitCode: e.ExitCode, Message: endMessage(structs.TaskEvent{State: structs.TaskLost, Message: e.Message})}
		what := "was " + end.Message // was lost: atom lost the coordinator for ...
		s.interrupted(j, t, e, end, structs.EventLost, what, replicaName(t)+" "+what)
		return
	}
	if e.State == structs.TaskRunning {
		started := t.State == structs.TaskScheduled
		t = s.putTask(t.ID, func(t *structs.Task) {
			if t.State == structs.TaskScheduled {
				t.State, t.StartedAt = structs.TaskRunning, e.Time
			}
			if e.Healthy != nil {
				t.Healthy = *e.Healthy
			}
			if e.Endpoint != "" {
				t.Endpoint = e.Endpoint
			}
		})
		if started {
			s.record(taskEventOf(e.Time, t, structs.EventStarted, "%s started on %s", replicaName(t), t.Node))
			if j != nil && j.FirstStartedAt.IsZero() {
				j = s.putJob(j.ID, func(j *structs.Job) { j.FirstStartedAt = e.Time })
			}
		}
		if j != nil && j.State == structs.JobScheduled && s.allRunning(j) {
			// Running from its last replica's start: a late report may
			// carry an earlier one.
			at := s.lastStart(j)
			s.putJob(j.ID, func(j *structs.Job) { j.State, j.StartedAt = structs.JobRunning, at })
			s.jobEvent(at, j.ID, structs.EventRunning, "running: %d replica(s) started", s.runningReplicas(j))
		}
		if started && j != nil && s.replicaBack(j, t) {
			s.putJob(j.ID, func(j *structs.Job) { j.Reason = "" })
		}
		return
	}
	stopping, reason := t.State == structs.TaskStopping, t.StopReason
	unstarted := t.State == structs.TaskScheduled && e.State == structs.TaskLost
	ended := s.putTask(t.ID, func(t *structs.Task) {
		t.State, t.ExitCode, t.Message, t.EndedAt = endState(e, stopping), e.ExitCode, endMessage(e), e.Time
	})
	s.taskEnded(ended, e, reason, stopping)
	if t.Executor != "" {
		// A Spark executor is no replica: Spark handles its end. One
		// atom stopped may be the last task its job waited for.
		if stopping && j != nil && t.Attempt == j.Attempt {
			s.afterStop(j.ID, reason, e.Time)
		}
		return
	}
	if e.Reason == structs.ReasonPreflightFailed {
		handled, msg := s.preflightFailed(t, e, j != nil && t.Attempt == j.Attempt && !stopping)
		switch {
		case !handled:
			e.Message = msg // an ordinary failure: say why nothing was quarantined
		case !stopping:
			return
		}
	}
	if j == nil || t.Attempt != j.Attempt {
		return
	}
	if stopping {
		s.afterStop(j.ID, reason, e.Time)
		return
	}
	if unstarted && s.lostUnstarted(j, t, e) {
		return
	}
	s.afterExit(j.ID, t, e)
}

// lostUnstarted handles task t of j's current attempt, lost before it
// ever reported Running: its leader placed it and went before starting it
// (a new leader does not start what an earlier one placed, as that one
// may have started it). That is not the job's failure: the job is
// requeued, its siblings stopped first, without using its restarts (a
// service's replica is simply placed again). It returns false when the
// loss is an ordinary failure instead: j already used its
// MaxUnstartedRequeues.
func (s *State) lostUnstarted(j *structs.Job, t *structs.Task, e structs.TaskEvent) bool {
	switch {
	case j.State.Ended() || j.Kind == structs.KindService:
		return false // afterExit: nothing, or the replica is placed again
	case j.LostUnstarted >= MaxUnstartedRequeues:
		return false
	}
	reason := fmt.Sprintf("requeued: replica %d was lost before it started%s", t.Index, suffix(e.Message))
	s.putJob(j.ID, func(j *structs.Job) { j.Reason = reason; countRequeue(j, structs.CauseLostUnstarted) })
	s.dropHeld(j.ID)
	s.restart(j.ID, reason, e.Time, false, structs.StopGang)
	return true
}

// checkEvent checks a task event's reason: an agent's (CheckReason), or
// the coordinator's own shutdown, with state Lost.
func checkEvent(e structs.TaskEvent) error {
	if e.Reason != structs.ReasonShutdown {
		return CheckReason(e)
	}
	if e.State != structs.TaskLost || len(e.Accelerators) > 0 {
		return invalidf("task %s: reason %s is only allowed with state Lost and no accelerators", e.Task, e.Reason)
	}
	return nil
}

// endState is the state a task ends in on report e: Stopped when the
// coordinator was stopping it (whatever it exited with: neither a success
// nor its own failure), else as reported. A task stopping that goes
// silent is lost all the same: nothing says it stopped.
func endState(e structs.TaskEvent, stopping bool) structs.TaskState {
	if stopping && e.State != structs.TaskLost {
		return structs.TaskStopped
	}
	return e.State
}

// interrupted ends task t of job j, which the platform stopped by no
// fault of the job at e.Time: the coordinator running it shut down
// (ReasonShutdown: t ends Stopped, for StopShutdown unless it was being
// stopped already), or atom lost every coordinator server and stopped it
// (ReasonDisconnected: t is lost). t ends at e.Time as end says; the
// task's event is kind, saying what (after the replica's name); a batch
// job's reason is "requeued: " and why. A task the coordinator was
// stopping anyway ends its stop; a batch job is requeued (its siblings
// stopped first, for the same reason) without using its restarts; a
// service's replica is placed again, also without (Requeuing).
func (s *State) interrupted(j *structs.Job, t *structs.Task, e, end structs.TaskEvent, kind structs.EventType, what, why string) {
	stopping, reason := t.State == structs.TaskStopping, t.StopReason
	stop := structs.StopGang // the siblings': another replica was lost
	if end.State == structs.TaskStopped {
		stop = structs.StopShutdown
	}
	ended := s.putTask(t.ID, func(t *structs.Task) {
		t.State, t.ExitCode, t.Message, t.EndedAt = end.State, end.ExitCode, end.Message, e.Time
		if end.State == structs.TaskStopped && !stopping {
			t.StopReason = stop
		}
	})
	s.record(taskEventOf(e.Time, ended, kind, "%s %s", replicaName(ended), what))
	switch {
	case j == nil || t.Attempt != j.Attempt || j.State.Ended():
	case stopping:
		s.afterStop(j.ID, reason, e.Time)
	case t.Executor != "":
		// A Spark executor is no replica: its driver stops with it.
	case j.Kind == structs.KindService:
		again := fmt.Sprintf("replica %d %s; placing it again", t.Index, what)
		s.putJob(j.ID, func(j *structs.Job) { j.Reason = again })
		s.jobEvent(e.Time, j.ID, structs.EventRequeuing, "%s without using a restart", again)
		s.pruneEnded(j.ID)
	default:
		why := "requeued: " + why
		s.putJob(j.ID, func(j *structs.Job) { j.Reason = why; countRequeue(j, structs.CauseInterrupted) })
		s.dropHeld(j.ID)
		s.restart(j.ID, why, e.Time, false, stop)
	}
}

// restart stops the live tasks of job id's current attempt for stop
// (StopGang, or StopShutdown when its coordinator shut down) so that it
// is requeued with reason once they have stopped (afterStop, by the
// attempt's AttemptStop: stop, unless a stop was ordered before); with
// none left to stop, it is requeued now. Its event says whether this uses one
// of the job's restarts (counted: its own failure, Restarting) or not (a
// coordinator's shutdown or outage, a task lost before it ran, a failed
// preflight: Requeuing, which says so).
func (s *State) restart(id structs.JobID, reason string, now time.Time, counted bool, stop structs.StopReason) {
	j := s.Jobs[id]
	if j.AttemptStop == "" {
		j = s.putJob(id, func(j *structs.Job) { j.AttemptStop = stop })
	}
	stopped := 0
	for _, x := range s.TasksOf(id) {
		if x.Attempt == j.Attempt && (x.State == structs.TaskScheduled || x.State == structs.TaskRunning) {
			s.putTask(x.ID, func(x *structs.Task) { x.State, x.StopReason = structs.TaskStopping, stop })
			stopped++
		}
	}
	kind, why, then := structs.EventRestarting, reason, ""
	if !counted {
		kind, why, then = structs.EventRequeuing, requeueWhy(reason), ", then pending again without using a restart"
	}
	switch {
	case stopped > 0:
		s.jobEvent(now, id, kind, "%s; stopping %d task(s) first%s", why, stopped, then)
	case s.holding(j):
		s.jobEvent(now, id, kind, "%s; once its stopping tasks have ended%s", why, then)
	default:
		s.requeue(id, reason, now, false)
	}
}

// runningReplicas counts j's running replicas of its current attempt.
func (s *State) runningReplicas(j *structs.Job) int {
	n := 0
	for _, t := range s.TasksOf(j.ID) {
		if t.RunsReplicaOf(j) {
			n++
		}
	}
	return n
}

// lastStart is when the last running replica of j's current attempt
// started.
func (s *State) lastStart(j *structs.Job) time.Time {
	var at time.Time
	for _, t := range s.TasksOf(j.ID) {
		if t.RunsReplicaOf(j) && t.StartedAt.After(at) {
			at = t.StartedAt
		}
	}
	return at
}

// replicaBack reports whether replica t of running job j, which has just
// started, ends what j's reason says: a reason about that replica ("replica
// 1 was lost ...; placing it again"), or any reason once every replica
// runs. A parked service keeps its own.
func (s *State) replicaBack(j *structs.Job, t *structs.Task) bool {
	if j.State != structs.JobRunning || j.Reason == "" || j.Reason == ParkedReason || t.Executor != "" || t.Attempt != j.Attempt {
		return false
	}
	return strings.HasPrefix(j.Reason, fmt.Sprintf("replica %d ", t.Index)) || s.runningReplicas(j) >= j.ShapeAt(j.Shape).Replicas
}

// allRunning reports whether every replica of j's attempt is running
// (executors are no replicas).
func (s *State) allRunning(j *structs.Job) bool {
	n := 0
	for _, t := range s.TasksOf(j.ID) {
		if t.Attempt != j.Attempt || !t.State.HoldsResources() || t.Executor != "" {
			continue
		}
		if t.State != structs.TaskRunning {
			return false
		}
		n++
	}
	return n >= max(1, min(j.ShapeAt(j.Shape).Replicas, max(j.MinAvailable, 1)))
}

// holding reports whether any task of j's current attempt holds resources.
func (s *State) holding(j *structs.Job) bool {
	for _, t := range s.TasksOf(j.ID) {
		if t.Attempt == j.Attempt && t.State.HoldsResources() {
			return true
		}
	}
	return false
}

// afterStop runs when a task of job id's current attempt that the
// coordinator stopped (for reason) has ended. Once none of the attempt's
// tasks holds resources, the job decides what follows, never the task
// that happened to end last:
//
//   - a job that ended (cancelled, failed, succeeded) stays as it ended;
//   - a service scaled to 0 meanwhile stays parked;
//   - an attempt stopped whole (AttemptStop, the first such stop
//     ordered) is requeued: preempted, counting a preemption (failing
//     past maxPreemptions); restarted or shut down, with the job's
//     reason (the restart, or the requeue that was not its fault, was
//     counted when the stop was ordered);
//   - a service whose replicas were stopped one by one (preempted,
//     scaled down, restarted for new configs), or exited meanwhile,
//     runs on: the cycle places its missing replicas.
//
// The first stop ordered wins because, once it is, every task of the
// attempt is stopping: what comes after (a replica's exit, a failed
// warm-up, a preemption planned on an older snapshot) finds nothing left
// to stop, and is often the stop's own doing (its SIGTERM's exit code).
func (s *State) afterStop(id structs.JobID, reason structs.StopReason, now time.Time) {
	j := s.Jobs[id]
	if j.Kind == structs.KindService && reason == structs.StopPreempted {
		s.pruneEnded(id) // a service preempted replica by replica keeps the newest only
	}
	if j.State.Ended() || s.holding(j) {
		return
	}
	stop := j.AttemptStop
	if stop == "" && j.Kind != structs.KindService {
		// A state from before AttemptStop was kept: a batch attempt's
		// tasks all stop for the one stop ordered first.
		stop = reason
	}
	if j.AttemptStop != "" {
		j = s.putJob(id, func(j *structs.Job) { j.AttemptStop = "" })
	}
	if j.Kind == structs.KindService && j.ShapeAt(j.Shape).Replicas == 0 {
		return // a service scaled to 0 meanwhile stays parked, not requeued
	}
	switch stop {
	case structs.StopPreempted:
		limit := j.MaxPreemptions
		if limit == 0 {
			limit = structs.DefaultMaxPreemptions
		}
		if j.Preemptions+1 > limit {
			s.endJob(id, structs.JobFailed, fmt.Sprintf("%s: preempted %d times", structs.ReasonTooManyPreempt, j.Preemptions+1), now, structs.StopCancelled)
			return
		}
		s.requeue(id, structs.ReasonPreempted, now, true)
	case structs.StopGang, structs.StopShutdown:
		s.requeue(id, j.Reason, now, false)
	}
}

// requeue returns j to Pending with a new attempt. Its quota charge (if
// any) stays: a pending job holds quota.
func (s *State) requeue(id structs.JobID, reason string, now time.Time, preempted bool) {
	s.dropHeld(id) // a spark job's executors' room: held again when it is placed again
	j := s.putJob(id, func(j *structs.Job) {
		j.State, j.Reason = structs.JobPending, reason
		j.StartedAt = time.Time{}
		j.Attempt++
		j.WarmUps = nil
		j.AttemptStop = ""
		j.PendingSince = now
		switch {
		case preempted:
			j.Preemptions++
		case j.RequeueCause == structs.CausePreflight:
			j.PreflightFailures++
		case j.RequeueCause == structs.CauseLostUnstarted:
			j.LostUnstarted++
		case j.RequeueCause == structs.CauseInterrupted:
			j.Interrupted++
		}
		j.RequeueCause = ""
	})
	s.jobEvent(now, id, structs.EventRequeued, "pending again as attempt %d: %s", structs.AttemptNumber(j.Attempt), requeueWhy(reason))
}

// countRequeue marks batch job j's requeue, about to be ordered, as one
// that is not its fault (cause), to count once it happens (requeue): a
// job requeued on the spot is counted at once; one whose attempt is
// being stopped already is requeued as the first stop ordered decides,
// and counted as that one.
func countRequeue(j *structs.Job, cause structs.RequeueCause) {
	if j.AttemptStop == "" {
		j.RequeueCause = cause
	}
}

// requeueWhy is a requeue's reason as its events say it, without the
// "requeued: " a job's reason starts with (the event's kind says so).
func requeueWhy(reason string) string {
	return strings.TrimPrefix(reason, "requeued: ")
}

// afterExit runs when a task ended on its own.
func (s *State) afterExit(id structs.JobID, t *structs.Task, e structs.TaskEvent) {
	j := s.Jobs[id]
	if j.State.Ended() {
		return
	}
	if j.Kind == structs.KindService {
		s.replicaExited(j, t, e)
		return
	}
	if e.State == structs.TaskSucceeded {
		if j.Kind == structs.KindMPI && t.Index == 0 {
			s.endJob(id, structs.JobSucceeded, "launcher exited 0", e.Time, structs.StopJobEnded)
			return
		}
		done := 0
		for _, x := range s.TasksOf(id) {
			if x.Attempt == j.Attempt && x.State == structs.TaskSucceeded {
				done++
			}
		}
		if done >= j.ShapeAt(j.Shape).Replicas {
			s.endJob(id, structs.JobSucceeded, "", e.Time, structs.StopJobEnded)
		}
		return
	}
	if j.Kind == structs.KindMPI && t.Index > 0 && e.Reason == structs.ReasonLauncherGone {
		// Stopped because its launcher's connection closed: the
		// launcher's own end (mpirun's) says why and ends the job.
		return
	}
	why := fmt.Sprintf("replica %d %s", t.Index, describeExit(e))
	restarts := j.Restarts()
	if j.RestartPolicy != structs.RestartOnFailure || restarts >= MaxRestarts {
		s.endJob(id, structs.JobFailed, why+noRestartsLeft(j, restarts), e.Time, structs.StopJobEnded)
		return
	}
	// Restart the whole job: siblings stop; once they have, it is
	// requeued, and placed again after the back-off (none the first time).
	s.putJob(id, func(j *structs.Job) {
		j.Reason = restarting(restarts, why)
		j.BackoffUntil = e.Time.Add(structs.RestartBackoff(restarts + 1))
	})
	s.dropHeld(id)
	s.restart(id, restarting(restarts, why), e.Time, true, structs.StopGang)
}

// stoppedOutside is atom's report e of t's end after a SIGTERM the
// coordinator did not ask atom for: the end of the coordinator's own stop
// if t is stopping (the stop's SIGTERM reached atom before the heartbeat
// saying so), else t lost (its Pod deleted or evicted, its node shut
// down): not the job's own failure, so a service's replica is placed
// again at once, without a back-off.
func stoppedOutside(t *structs.Task, e structs.TaskEvent) structs.TaskEvent {
	e.Reason = ""
	if t.State == structs.TaskStopping {
		return e
	}
	e.State = structs.TaskLost
	how := fmt.Sprintf("exit code %d", e.ExitCode)
	if e.Message != "" {
		how = e.Message // killed by signal ...
	}
	e.Message = "atom got SIGTERM from outside the coordinator (a Pod deleted or evicted, a node shutting down, a kill by hand); the job then ended: " + how
	return e
}

// endMessage is what a task keeps of the event that ended it.
func endMessage(e structs.TaskEvent) string {
	m := e.Message
	switch {
	case e.State == structs.TaskLost:
		m = "lost" + suffix(m)
	case e.Reason != "":
		m = e.Reason + suffix(m)
	}
	const limit = 1024 // atom sends a line; the state keeps at most this
	if len(m) > limit {
		m = strings.ToValidUTF8(m[:limit], "") + "..."
	}
	return m
}

// restarting is the reason of a job restarted by its restart policy
// after why, with used restarts used before this one.
func restarting(used int, why string) string {
	return fmt.Sprintf("restart %d of %d: %s", used+1, MaxRestarts, why)
}

// noRestartsLeft is what a Failed reason adds for a job whose restart
// policy would have restarted it, had it a restart left.
func noRestartsLeft(j *structs.Job, used int) string {
	if j.RestartPolicy != structs.RestartOnFailure {
		return ""
	}
	return fmt.Sprintf(" (no restarts left: %d of %d used)", used, MaxRestarts)
}

func describeExit(e structs.TaskEvent) string {
	switch {
	case e.State == structs.TaskLost:
		return "was lost" + suffix(e.Message)
	case e.Message != "":
		return fmt.Sprintf("failed with exit code %d: %s", e.ExitCode, e.Message)
	}
	return fmt.Sprintf("failed with exit code %d", e.ExitCode)
}

func suffix(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}
