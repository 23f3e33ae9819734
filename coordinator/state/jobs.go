package state

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// JobSubmit accepts a validated job. The leader assigns Job.ID and Now.
// It is idempotent by RequestID: a retry after a lost reply returns the job
// the first attempt created, never a second one. Admission (quota
// charge and job creation) is one replicated change, so a refused
// submission charges nothing.
type JobSubmit struct {
	RequestID string       `json:"requestID,omitempty"`
	Job       *structs.Job `json:"job"`
	Now       time.Time    `json:"now"`
}

// SubmitResult is what JobSubmit returns.
type SubmitResult struct {
	JobID    structs.JobID `json:"jobID"`
	Existing bool          `json:"existing"` // a retry: the job already existed
}

func (*JobSubmit) Type() MsgType { return MsgJobSubmit }

// plainRequestID is a request ID as its client sent it: the state keys
// it by user ("u1/req-1"), since two users may send the same one.
func plainRequestID(id string) string { return id[strings.LastIndexByte(id, '/')+1:] }

func (c *JobSubmit) apply(s *State) (any, error) {
	if c.RequestID != "" {
		if id, ok := s.Requests[c.RequestID]; ok {
			// A retry carries the same job; another job under a used
			// request ID is a client bug, not a retry: an edited spec
			// sent again with the same ID returned the old job.
			if o := s.Jobs[id]; o != nil && c.Job != nil {
				if f := specDiffers(o, c.Job); f != "" {
					return nil, existsf("request ID %q was used for job %s (%s): this spec differs in %s: use a new request ID for a new job", plainRequestID(c.RequestID), o.ID, o.Name, f)
				}
			}
			return SubmitResult{JobID: id, Existing: true}, nil
		}
	}
	j := c.Job
	if j == nil || j.ID == "" {
		return nil, invalidf("submit: job and job ID are required")
	}
	if s.Jobs[j.ID] != nil {
		return nil, existsf("job ID %s already exists", j.ID)
	}
	if id, ok := s.live[nameOf(j)]; ok {
		o := s.Jobs[id]
		whose := "user " + string(o.Owner) + "'s"
		if o.Project != "" {
			whose = "project " + string(o.Project) + "'s"
		}
		return nil, existsf("job name %s is taken by %s active job %s (%s): a name is unique among a user's (or a project's) jobs that have not ended; cancel it, wait for it to end, or choose another name",
			j.Name, whose, o.ID, o.State)
	}
	if n := j.PreemptNotice; n != nil {
		if pool, max := s.maxNotice(j); time.Duration(n.Seconds)*time.Second > max {
			secs := int64(max / time.Second)
			which := fmt.Sprintf("pool %s allows notices of at most %d seconds (%s, its maxPreemptNotice)", pool, secs, max)
			if pool == structs.PublicPool {
				which = fmt.Sprintf("the public pool allows notices of at most %d seconds (%s)", secs, max)
			}
			return nil, invalidf("preemptNotice.seconds %d is not allowed: %s: use 1 to %d", n.Seconds, which, secs)
		}
	}
	a, err := s.admit(j)
	if err != nil {
		return nil, err
	}
	configs, err := s.resolveConfigs(j)
	if err != nil {
		return nil, err
	}
	jj := *j
	jj.Configs = configs
	jj.State, jj.Reason = structs.JobPending, ""
	jj.SubmitTime, jj.PendingSince, jj.StartedAt, jj.EndedAt = c.Now, c.Now, time.Time{}, time.Time{}
	jj.Attempt, jj.Preemptions, jj.Shape, jj.PreflightFailures, jj.LostUnstarted, jj.Interrupted = 0, 0, 0, 0, 0, 0
	jj.AttemptStop = ""
	jj.PoolOnly = a.PoolOnly
	jj.Charged, jj.ChargedScope = nil, ""
	if a.Charge != nil {
		jj.Charged, jj.ChargedScope = a.Charge, a.Scope
		s.charge(a.Scope, nil, a.Charge)
	}
	s.Jobs[jj.ID] = &jj
	s.live[nameOf(&jj)] = jj.ID
	if c.RequestID != "" {
		s.Requests[c.RequestID] = jj.ID
	}
	s.jobEvent(c.Now, jj.ID, structs.EventSubmitted, "submitted by %s%s: %s priority, %d replica(s) of %s", jj.Owner, projectSuffix(jj.Project), jj.Priority, jj.Replicas, jj.Resources)
	return SubmitResult{JobID: jj.ID}, nil
}

// specDiffers names the first field of the user's spec in which a
// resubmitted job differs from o, the job its request ID made ("" for a
// true retry). Only what a job keeps from its spec is compared: a scale
// changes replicas, so they are not.
func specDiffers(o, j *structs.Job) string {
	switch {
	case o.Name != j.Name:
		return "name"
	case o.Kind != j.Kind:
		return "kind"
	case o.Project != j.Project:
		return "project"
	case o.Priority != j.Priority:
		return "priority"
	case o.Image != j.Image:
		return "image"
	case !slices.Equal(o.Command, j.Command) || !slices.Equal(o.Args, j.Args):
		return "command"
	case !maps.Equal(o.Env, j.Env):
		return "env"
	case !reflect.DeepEqual(o.Resources, j.Resources):
		return "resources"
	}
	return ""
}

// JobCancel ends a job: Cancelled, quota released, tasks stopped. By,
// if set, is who cancelled it (for its events).
type JobCancel struct {
	ID  structs.JobID  `json:"id"`
	Now time.Time      `json:"now"`
	By  structs.UserID `json:"by,omitempty"`
}

func (*JobCancel) Type() MsgType { return MsgJobCancel }

func (c *JobCancel) apply(s *State) (any, error) {
	j := s.Jobs[c.ID]
	if j == nil {
		return nil, fmt.Errorf("job %s: %w", c.ID, ErrNotFound)
	}
	if j.State.Ended() {
		return nil, invalidf("job %s already ended (%s)", c.ID, j.State)
	}
	said := "cancelled"
	if c.By != "" {
		said += " by " + string(c.By)
	}
	s.endJobSaying(c.ID, structs.JobCancelled, "cancelled", said, c.Now, structs.StopCancelled)
	return nil, nil
}

// ParkedReason is the reason a service scaled to 0 replicas shows (state
// Running, 0 replicas).
const ParkedReason = "scaled to 0 replicas"

// ServiceScale changes a service's replica count. Down: pending replicas
// go first, then unhealthy, then the newest (sched.ScaleDown). Up: the new
// replicas are pending and, for normal services, charged at once. 0
// parks the service: every replica stops, its charge drops to nothing,
// it stays Running (reason ParkedReason) with its spec; scaled up from 0
// it is Pending again, as at submit.
type ServiceScale struct {
	ID       structs.JobID  `json:"id"`
	Replicas int            `json:"replicas"`
	Now      time.Time      `json:"now"`
	By       structs.UserID `json:"by,omitempty"` // who scaled it (for its events)
}

func (*ServiceScale) Type() MsgType { return MsgServiceScale }

func (c *ServiceScale) apply(s *State) (any, error) {
	j := s.Jobs[c.ID]
	switch {
	case j == nil:
		return nil, fmt.Errorf("job %s: %w", c.ID, ErrNotFound)
	case j.Kind != structs.KindService:
		return nil, invalidf("job %s is a %s job: only services scale (cancel it to stop it)", c.ID, j.Kind)
	case j.State.Ended():
		return nil, invalidf("job %s already ended", c.ID)
	case c.Replicas < 0 || c.Replicas > structs.MaxReplicas:
		return nil, invalidf("replicas %d is not allowed: use 0 (park the service) to %d", c.Replicas, structs.MaxReplicas)
	case c.Replicas == j.ShapeAt(j.Shape).Replicas:
		return nil, nil // already that size: no event, no quota check
	}
	parked := j.ShapeAt(j.Shape).Replicas == 0
	var live []*structs.Task
	inProject := 0
	for _, t := range s.TasksOf(c.ID) {
		if t.Attempt == j.Attempt && (t.State == structs.TaskScheduled || t.State == structs.TaskRunning) {
			live = append(live, t)
		}
	}
	plan, err := sched.ScaleDown(j, live, c.Replicas)
	if err != nil {
		return nil, invalidf("%w", err)
	}
	stop := map[structs.TaskID]bool{}
	for _, id := range plan.Stop {
		stop[id] = true
	}
	for _, t := range live {
		if !stop[t.ID] && t.Pool != "" && t.Pool != structs.PublicPool {
			inProject++
		}
	}
	// Quota follows the replica count for charged (normal, public) services.
	var want structs.ResourceList
	if j.Priority == structs.PriorityNormal && !j.PoolOnly {
		if n := c.Replicas - inProject; n > 0 {
			want = structs.Charge(structs.Shape{Replicas: n, Resources: j.ShapeAt(j.Shape).Resources})
		}
		if q := s.quotaShortfall(j, want); q != nil {
			return nil, &sched.QuotaError{QuotaShortfall: *q}
		}
	}
	for _, id := range plan.Stop {
		s.putTask(id, func(t *structs.Task) { t.State, t.StopReason = structs.TaskStopping, structs.StopScaled })
	}
	for id, idx := range plan.Reindex {
		s.putTask(id, func(t *structs.Task) { t.Index = idx })
	}
	scope := j.ChargedScope
	if scope == "" {
		scope = j.ChargeScope()
	}
	if j.Priority == structs.PriorityNormal && !j.PoolOnly {
		s.charge(scope, j.Charged, want)
	}
	s.putJob(c.ID, func(j *structs.Job) {
		j.Replicas = c.Replicas
		if j.Shape > 0 {
			j.Fallbacks = append([]structs.Shape(nil), j.Fallbacks...)
			j.Fallbacks[j.Shape-1].Replicas = c.Replicas
		}
		switch {
		case c.Replicas == 0:
			// Parked: nothing to place, so nothing pending, timing out
			// or backing off; the replicas stop as any scaled down.
			j.State, j.Reason = structs.JobRunning, ParkedReason
			j.BackoffUntil, j.CrashLoop = time.Time{}, 0
		case parked:
			// Unparked: pending again as at submit (placed once
			// minAvailable fit; pendingTimeout counts from now).
			j.State, j.Reason, j.PendingSince, j.StartedAt = structs.JobPending, "", c.Now, time.Time{}
		}
		if j.Priority == structs.PriorityNormal && !j.PoolOnly {
			j.Charged, j.ChargedScope = want, ""
			if want != nil {
				j.ChargedScope = scope
			}
		}
	})
	if c.Replicas == 0 {
		s.dropReservations(c.ID) // room held for it is free for others
	}
	s.scaledEvent(c, j.ShapeAt(j.Shape).Replicas, len(plan.Stop))
	return nil, nil
}

// quotaShortfall checks replacing j's charge by want against its limits.
func (s *State) quotaShortfall(j *structs.Job, want structs.ResourceList) *sched.QuotaShortfall {
	scope := j.ChargeScope()
	return sched.ChargeShortfall(j, want, s.Quotas[scope], s.Usage[scope])
}

// JobsExpire removes jobs that ended before Before, with their tasks,
// tokens and request IDs, so state and snapshots stay bounded.
type JobsExpire struct {
	Before time.Time `json:"before"`
}

// ExpireResult counts what JobsExpire removed.
type ExpireResult struct {
	Jobs int `json:"jobs"`
}

func (*JobsExpire) Type() MsgType { return MsgJobsExpire }

func (c *JobsExpire) apply(s *State) (any, error) {
	gone := map[structs.JobID]bool{}
	for id, at := range s.Ended {
		if at.Before(c.Before) {
			gone[id] = true
		}
	}
	for _, t := range s.Tasks {
		if gone[t.Job] && t.State.HoldsResources() {
			delete(gone, t.Job) // a task still stopping: keep the job until it ends
		}
	}
	for id, t := range s.Tasks {
		if gone[t.Job] {
			delete(s.Tasks, id)
			delete(s.Tokens, id)
		}
	}
	s.forgetEvents(gone)
	for id := range gone {
		delete(s.Jobs, id)
		delete(s.Ended, id)
		delete(s.byJob, id)
	}
	for r, id := range s.Requests {
		if gone[id] {
			delete(s.Requests, r)
		}
	}
	return ExpireResult{Jobs: len(gone)}, nil
}
