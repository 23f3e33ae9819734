package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// submitJob: POST /v1/jobs. The body is a job spec; the owner is the
// caller. A request ID (Idempotency-Key or ?requestID=) makes a retry
// return the job the first attempt made; it is kept per user, so two users
// cannot collide.
func (s *server) submitJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	key, err := requestID(r)
	if err != nil {
		return 0, nil, err
	}
	spec, err := readSpec(r, "job spec", structs.ParseJobSpec)
	if err != nil {
		return 0, nil, err
	}
	job, err := spec.ToJob(c.user)
	if err != nil {
		return 0, nil, errorf(http.StatusBadRequest, "%v", err)
	}
	if err := structs.CheckRunnable(job, s.pluginKinds()); err != nil {
		return 0, nil, errorf(http.StatusBadRequest, "%v", err)
	}
	if err := taskenv.Check(job); err != nil {
		return 0, nil, errorf(http.StatusBadRequest, "%v", err)
	}
	job.ID = s.freshID(job.Name)
	cmd := &state.JobSubmit{Job: job, Now: s.clock()}
	if key != "" {
		cmd.RequestID = string(c.user) + "/" + key
	}
	res, err := s.apply(r.Context(), cmd)
	if err != nil {
		var na interface{ NotApplied() bool }
		if errors.As(err, &na) && na.NotApplied() {
			return 0, nil, errorf(http.StatusServiceUnavailable, "submit job %s: %v: nothing was applied: submit again", job.Name, err)
		}
		if status, _ := classify(err); status == http.StatusServiceUnavailable {
			how := fmt.Sprintf("retry with the same request ID (%s: %s)", wire.HeaderIdempotencyKey, key)
			if key == "" {
				how = "check coordinator job list before submitting again, or send an " + wire.HeaderIdempotencyKey + " header so retries are safe"
			}
			return 0, nil, errorf(http.StatusServiceUnavailable, "submit job %s: %v: the outcome is unknown: the job may or may not have been accepted: %s", job.Name, err, how)
		}
		return 0, nil, err
	}
	sr, ok := res.(state.SubmitResult)
	if !ok {
		return 0, nil, errorf(http.StatusInternalServerError, "submit job %s: unexpected result %T", job.Name, res)
	}
	out := wire.SubmitResponse{JobID: sr.JobID, Existing: sr.Existing, RequestID: key}
	s.store.Read(func(st *state.State) { out.Job = st.Jobs[sr.JobID] })
	if sr.Existing {
		return http.StatusOK, out, nil
	}
	return http.StatusCreated, out, nil
}

// freshID returns a job ID no job has yet (a random suffix rarely
// collides; the state machine would refuse a collision).
func (s *server) freshID(name string) structs.JobID {
	var id structs.JobID
	for range 4 {
		id = structs.JobID(s.newID(name))
		taken := false
		s.store.Read(func(st *state.State) { taken = st.Jobs[id] != nil })
		if !taken {
			break
		}
	}
	return id
}

func (s *server) pluginKinds() []structs.JobKind {
	if s.plugins == nil {
		return nil
	}
	return s.plugins()
}

// knownKind refuses a kind --kind may not name, as a job spec's is
// refused: neither built in nor a plugin's (nor any job's).
func (s *server) knownKind(k structs.JobKind) error {
	if err := structs.CheckRunnable(&structs.Job{Kind: k, Command: []string{"-"}}, s.pluginKinds()); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	return nil
}

// jobFilter is GET /v1/jobs's query.
type jobFilter struct {
	state   structs.JobState
	owner   structs.UserID
	project structs.ProjectID
	kind    structs.JobKind
}

func parseJobFilter(r *http.Request) (jobFilter, error) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "state", "owner", "project", "kind":
		default:
			return jobFilter{}, errorf(http.StatusBadRequest, "query parameter %q is not known: use state, owner, project or kind", trunc(k))
		}
	}
	f := jobFilter{state: structs.JobState(q.Get("state")), owner: structs.UserID(q.Get("owner")),
		project: structs.ProjectID(q.Get("project")), kind: structs.JobKind(q.Get("kind"))}
	if f.state == "" {
		return f, nil
	}
	for _, st := range []structs.JobState{structs.JobPending, structs.JobScheduled, structs.JobRunning, structs.JobSucceeded, structs.JobFailed, structs.JobCancelled} {
		if strings.EqualFold(string(f.state), string(st)) { // "running" is Running
			f.state = st
			return f, nil
		}
	}
	return jobFilter{}, errorf(http.StatusBadRequest, "state %q is not allowed: use Pending, Scheduled, Running, Succeeded, Failed or Cancelled", trunc(string(f.state)))
}

func (f jobFilter) match(j *structs.Job) bool {
	return (f.state == "" || j.State == f.state) && (f.owner == "" || j.Owner == f.owner) &&
		(f.project == "" || j.Project == f.project) && (f.kind == "" || j.Kind == f.kind)
}

// listJobs: GET /v1/jobs. Users see their own jobs and their projects';
// admins all. Oldest first.
func (s *server) listJobs(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	f, err := parseJobFilter(r)
	if err != nil {
		return 0, nil, err
	}
	out := wire.JobList{Jobs: []*structs.Job{}}
	s.store.Read(func(st *state.State) {
		mine := projects(st, c.user)
		for _, j := range st.Jobs {
			if c.canSeeJob(j, mine) && f.match(j) {
				out.Jobs = append(out.Jobs, j)
			}
		}
	})
	if f.kind != "" && len(out.Jobs) == 0 { // a plugin's jobs outlive it
		if err := s.knownKind(f.kind); err != nil {
			return 0, nil, err
		}
	}
	slices.SortFunc(out.Jobs, func(a, b *structs.Job) int {
		if c := a.SubmitTime.Compare(b.SubmitTime); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
	return http.StatusOK, out, nil
}

// jobStatus reads job id and its tasks if c may see it. A server that
// does not have the job catches up with the leader (Lagging.CatchUp)
// before it says not found: the job may have been accepted through
// another server a moment ago, and a 404 would tell the client it does
// not exist (found by make chaos: a follower just back from a cut refused
// to cancel an acknowledged job). It says retry (503) when it cannot
// catch up.
func (s *server) jobStatus(ctx context.Context, id structs.JobID, c caller) (*wire.JobStatus, error) {
	js, err := s.readJobStatus(id, c)
	l, ok := s.store.(Lagging)
	if err == nil || !ok {
		return js, err
	}
	if cerr := l.CatchUp(ctx); cerr != nil {
		return nil, errorf(http.StatusServiceUnavailable, "job %s is not known to this server, which cannot catch up with the leader now (%v): retry", trunc(string(id)), cerr)
	}
	return s.readJobStatus(id, c)
}

func (s *server) readJobStatus(id structs.JobID, c caller) (*wire.JobStatus, error) {
	var out *wire.JobStatus
	s.store.Read(func(st *state.State) {
		j := st.Jobs[id]
		if j == nil || !c.canSeeJob(j, projects(st, c.user)) {
			return
		}
		out = &wire.JobStatus{Job: j, Tasks: st.TasksOf(id)}
		out.CacheAt = cacheAt(st, j, out.Tasks)
	})
	if out == nil {
		return nil, errorf(http.StatusNotFound, "job %s not found", trunc(string(id)))
	}
	if out.Tasks == nil {
		out.Tasks = []*structs.Task{}
	}
	out.WarmUps = s.warmUps(out.Job)
	return out, nil
}

// localCacheAt is where a task on a local cluster sees the dataset cache.
const localCacheAt = "each task's own directory (cache/ there; the job reads $ATOM_CACHE_DIR)"

// cacheAt says where j's tasks see the dataset cache (wire.JobStatus):
// by the cluster of its newest task's node, else the cluster it names,
// else the one kind every declared cluster is; the mountPath when that
// is a kubernetes cluster or unknown.
func cacheAt(st *state.State, j *structs.Job, tasks []*structs.Task) string {
	if j.CacheMountPath == "" {
		return ""
	}
	cluster := j.Cluster
	for i := len(tasks) - 1; i >= 0; i-- {
		if n := st.Nodes[tasks[i].Node]; n != nil {
			cluster = n.Cluster
			break
		}
	}
	local := cluster != "" && st.Clusters[cluster] != nil && st.Clusters[cluster].Backend == "local"
	if cluster == "" && len(st.Clusters) > 0 {
		local = true
		for _, c := range st.Clusters {
			local = local && c.Backend == "local"
		}
	}
	if local {
		return localCacheAt
	}
	return j.CacheMountPath
}

// WarmUpReporter is implemented by a Store that knows the progress of
// cache warm-ups (the leader runs them): WarmUps returns job id's.
type WarmUpReporter interface {
	WarmUps(id structs.JobID) []structs.WarmUpStatus
}

// warmUps lists j's warm-ups of its current attempt, with their progress
// where the store knows it.
func (s *server) warmUps(j *structs.Job) []structs.WarmUpStatus {
	var out []structs.WarmUpStatus
	var progress []structs.WarmUpStatus
	if r, ok := s.store.(WarmUpReporter); ok && len(j.WarmUps) > 0 {
		progress = r.WarmUps(j.ID)
	}
	for _, w := range j.WarmUps {
		if w.Attempt != j.Attempt {
			continue
		}
		st := structs.WarmUpStatus{WarmUp: w}
		for _, p := range progress {
			if p.Cluster == w.Cluster && p.Attempt == w.Attempt {
				st = p
				st.WarmUp = w
			}
		}
		out = append(out, st)
	}
	return out
}

// getJob: GET /v1/jobs/{id}: the job and its tasks. Jobs the caller may
// not see are not found, so their IDs are not revealed either.
func (s *server) getJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	js, err := s.jobStatus(r.Context(), structs.JobID(r.PathValue("id")), c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, js, nil
}

// whyJob: GET /v1/jobs/{id}/why.
func (s *server) whyJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	js, err := s.jobStatus(r.Context(), structs.JobID(r.PathValue("id")), c)
	if err != nil {
		return 0, nil, err
	}
	j := js.Job
	out := wire.WhyResponse{Job: j.ID, State: j.State, Why: s.store.Why(j.ID)}
	if out.Why != nil || j.State == structs.JobPending || j.Kind == structs.KindService {
		var view *state.State
		s.store.Read(func(st *state.State) { view = st.Clone() }) // ordered outside the lock
		out.Queue = view.QueuePlace(j.ID, s.clock())
	}
	switch {
	case out.Why != nil:
		out.Pending = true
		out.Message = out.Why.Message
	case j.State == structs.JobPending:
		out.Pending = true
		out.Message = "pending: the scheduler has not looked at this job yet"
		if j.Reason != "" {
			out.Message = "pending (" + j.Reason + "): the scheduler has not looked at this job since"
		}
	default:
		out.Message = "not pending: the job is " + string(j.State)
		if j.Reason != "" {
			out.Message += " (" + j.Reason + ")"
		}
	}
	return http.StatusOK, out, nil
}

// cancelJob: POST /v1/jobs/{id}/cancel.
func (s *server) cancelJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	id := structs.JobID(r.PathValue("id"))
	js, err := s.jobStatus(r.Context(), id, c)
	if err != nil {
		return 0, nil, err
	}
	if js.Job.State.Ended() {
		for _, t := range js.Tasks {
			if t.State.HoldsResources() {
				return 0, nil, errorf(http.StatusConflict, "job %s is already %s and its tasks are stopping (each gets its stop grace, then SIGKILL): there is nothing more to cancel",
					id, strings.ToLower(string(js.Job.State)))
			}
		}
		return 0, nil, errorf(http.StatusConflict, "job %s already ended (%s): there is nothing to cancel", id, js.Job.State)
	}
	if _, err := s.apply(r.Context(), &state.JobCancel{ID: id, Now: s.clock(), By: c.user}); err != nil {
		return 0, nil, conflictIfInvalid(err)
	}
	js, err = s.jobStatus(r.Context(), id, c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, js, nil
}

// scaleJob: POST /v1/jobs/{id}/scale {replicas}: services only.
func (s *server) scaleJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	id := structs.JobID(r.PathValue("id"))
	return s.serviceCommand(r, c, func(j *structs.Job) (state.Command, error) {
		var req wire.ScaleRequest
		if err := decodeJSON(r, &req, "a scale request"); err != nil {
			return nil, err
		}
		switch {
		case req.Replicas == nil:
			return nil, &structs.FieldError{Field: "replicas", Msg: fmt.Sprintf("is missing: send {\"replicas\": N}, N from 0 (park the service) to %d", structs.MaxReplicas)}
		case j.Kind != structs.KindService:
			return nil, errorf(http.StatusBadRequest, "job %s is a %s job: only services scale (cancel it to stop it)", id, j.Kind)
		case j.State.Ended():
			return nil, errorf(http.StatusConflict, "job %s already ended (%s): submit it again instead", id, j.State)
		case *req.Replicas < 0 || *req.Replicas > structs.MaxReplicas:
			return nil, &structs.FieldError{Field: "replicas", Msg: fmt.Sprintf("%d is not allowed: use 0 (park the service) to %d", *req.Replicas, structs.MaxReplicas)}
		}
		// A scale to the size it has changes nothing: the state machine
		// decides so, on the committed state (this server's may lag).
		return &state.ServiceScale{ID: id, Replicas: *req.Replicas, Now: s.clock(), By: c.user}, nil
	})
}
