package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// jobPath is the API path of job id (and more path after it).
func jobPath(id, more string) string { return "/v1/jobs/" + url.PathEscape(id) + more }

type field struct{ Name, Value string }

type taskRow struct {
	ID, Node, GPUs, State, StateClass, Exit, Reason, Started, Ended, Duration string
	Replica                                                                   string
	Attempt                                                                   int
	Current, Live                                                             bool // of the job's current attempt; holds resources
}

type jobView struct {
	ID, Name, State, StateClass, Reason, Flash string
	Ended, Service                             bool
	Replicas                                   int
	Fields                                     []field
	Pending                                    bool
	Why                                        whyView
	Tasks                                      []taskRow
	Events                                     []eventRow // as they happened, oldest first (as job events)
	EventsDropped                              int        // older events no longer kept
	Spec                                       string
	LogTask                                    string // the task whose log shows first
}

// job: GET /ui/jobs/{id}: the job from GET /v1/jobs/{id} (so a user who
// may not see it gets the API's 404), its why-pending, tasks and spec.
func (s *server) job(w http.ResponseWriter, r *http.Request, u *session) {
	id := r.PathValue("id")
	resp := s.call(r, u, http.MethodGet, jobPath(id, ""), nil)
	if resp.status != http.StatusOK {
		s.fail(w, r, u, resp.status, resp.message())
		return
	}
	var js wire.JobStatus
	if err := resp.decode(&js); err != nil || js.Job == nil {
		s.fail(w, r, u, http.StatusBadGateway, fmt.Sprintf("the API's answer about job %s could not be read: %v", id, err))
		return
	}
	now := s.clock()
	j := js.Job
	sh := j.ShapeAt(j.Shape)
	v := jobView{ID: string(j.ID), Name: j.Name, State: string(j.State), StateClass: jobStateClass(j.State), Reason: j.Reason,
		Ended: j.State.Ended(), Service: j.Kind == structs.KindService, Replicas: sh.Replicas, Spec: specYAML(j)}
	switch r.URL.Query().Get("done") {
	case "cancel":
		v.Flash = "Cancelled: the job's tasks are told to stop."
	case "scale":
		v.Flash = fmt.Sprintf("Scaled to %s.", plural(sh.Replicas, "replica", "replicas"))
	}
	v.Fields = jobFields(j, now)
	why := s.call(r, u, http.MethodGet, jobPath(id, "/why"), nil)
	var wr wire.WhyResponse
	if why.status == http.StatusOK && why.decode(&wr) == nil && wr.Pending {
		v.Pending, v.Why = true, newWhyView(wr.Why, j)
	}
	ended := s.jobEvents(r, u, &v, now)
	for i := len(js.Tasks) - 1; i >= 0; i-- { // newest first; the first running one shows its log
		t := js.Tasks[i]
		row := newTaskRow(t, j, now)
		if at, ok := ended[t.ID]; ok {
			row.Ended = stamp(at)
		}
		if v.LogTask == "" && t.State == structs.TaskRunning {
			v.LogTask = string(t.ID)
		}
		v.Tasks = append(v.Tasks, row)
	}
	if v.LogTask == "" && len(js.Tasks) > 0 {
		v.LogTask = string(js.Tasks[len(js.Tasks)-1].ID)
	}
	s.render(w, r, u, http.StatusOK, "job", "Job "+j.Name, v)
}

// jobEvents reads the job's events from GET /v1/jobs/{id}/events into v
// and returns when each of its tasks ended, by the events that say so.
func (s *server) jobEvents(r *http.Request, u *session, v *jobView, now time.Time) map[structs.TaskID]time.Time {
	resp := s.call(r, u, http.MethodGet, jobPath(v.ID, "/events"), nil)
	var l wire.EventList
	if resp.status != http.StatusOK || resp.decode(&l) != nil {
		return nil
	}
	var view api.Viewer
	s.store.Read(func(st *state.State) { view = api.ViewerOf(st, u.user) })
	visible := func(id structs.JobID) bool {
		var ok bool
		s.store.Read(func(st *state.State) { j := st.Jobs[id]; ok = j != nil && view.Job(j) })
		return ok
	}
	ended := map[structs.TaskID]time.Time{}
	for _, e := range l.Events {
		v.Events = append(v.Events, newEventRow(e, now, visible))
		switch e.Type {
		case structs.EventSucceeded, structs.EventFailed, structs.EventStopped, structs.EventLost:
			if _, seen := ended[e.Task]; e.Task != "" && !seen {
				ended[e.Task] = e.Time
			}
		}
	}
	v.EventsDropped = l.Dropped
	return ended
}

// jobFields are the job page's facts, in reading order.
func jobFields(j *structs.Job, now time.Time) []field {
	sh := j.ShapeAt(j.Shape)
	f := []field{{"Kind", string(j.Kind)}, {"Owner", string(j.Owner)}, {"Project", string(j.Project)}, {"Priority", j.Priority.String()}}
	replicas := strconv.Itoa(sh.Replicas)
	if j.MinAvailable > 0 {
		replicas += fmt.Sprintf(" (starts at %d)", j.MinAvailable)
	}
	f = append(f, field{"Replicas", replicas}, field{"Per replica", perReplica(sh.Resources)})
	if j.Shape > 0 {
		f = append(f, field{"Shape", fmt.Sprintf("fallback %d", j.Shape)})
	}
	f = append(f, field{"Submitted", stamp(j.SubmitTime) + " (" + ago(j.SubmitTime, now) + " ago)"})
	if !j.FirstStartedAt.IsZero() {
		f = append(f, field{"Started", stamp(j.FirstStartedAt)})
	}
	if !j.EndedAt.IsZero() {
		f = append(f, field{"Ended", stamp(j.EndedAt)})
	}
	if j.State == structs.JobPending {
		f = append(f, field{"Waiting", ago(pendingSince(j), now)})
	}
	f = append(f, field{"Attempt", strconv.Itoa(structs.AttemptNumber(j.Attempt))})
	restarts := j.RestartSummary() // a batch job's budget
	if restarts == "" && j.ReplicaRestarts > 0 {
		restarts = plural(j.ReplicaRestarts, "replica", "replicas") + " placed again"
	}
	if restarts != "" && !j.State.Ended() && now.Before(j.BackoffUntil) {
		restarts += "; back-off until " + stamp(j.BackoffUntil)
	}
	f = append(f, field{"Restarts", restarts})
	if j.Preemptions > 0 {
		f = append(f, field{"Preemptions", strconv.Itoa(j.Preemptions)})
	}
	if len(j.Charged) > 0 {
		f = append(f, field{"Quota held", string(j.ChargedScope) + " " + resourceList(j.Charged)})
	}
	if j.Image != "" {
		f = append(f, field{"Image", j.Image})
	}
	if len(j.Command)+len(j.Args) > 0 {
		f = append(f, field{"Command", strings.Join(append(append([]string{}, j.Command...), j.Args...), " ")})
	}
	out := f[:0]
	for _, x := range f {
		if x.Value != "" {
			out = append(out, x)
		}
	}
	return out
}

func newTaskRow(t *structs.Task, j *structs.Job, now time.Time) taskRow {
	row := taskRow{ID: string(t.ID), Node: string(t.Node), State: taskStateText(t), StateClass: taskStateClass(t),
		Replica: strconv.Itoa(t.Index), Attempt: structs.AttemptNumber(t.Attempt), Started: stamp(t.StartedAt),
		Current: t.Attempt == j.Attempt, Live: t.State.HoldsResources()}
	if t.Executor != "" {
		row.Replica = "executor " + t.Executor
	}
	if n := t.Accels.Count(); n > 0 {
		row.GPUs = fmt.Sprintf("%s %s", orAny(t.Resources.AccelType), indices(t.Accels.Indices()))
	} else if t.Resources.Accels > 0 {
		row.GPUs = fmt.Sprintf("%d× %s", t.Resources.Accels, orAny(t.Resources.AccelType))
	}
	if t.ExitReported() && !t.StartedAt.IsZero() {
		row.Exit = strconv.Itoa(t.ExitCode)
	}
	reason := t.Message
	if t.StopReason != "" && reason == "" {
		reason = string(t.StopReason)
	}
	row.Reason = reason
	if !t.StartedAt.IsZero() && t.State.HoldsResources() {
		row.Duration = human(now.Sub(t.StartedAt))
	}
	return row
}

// specYAML is j's spec as its user wrote it (structs.Job.Spec): the
// fields of a spec, none of its status, which the page shows apart.
func specYAML(j *structs.Job) string {
	y, err := j.Spec().YAML()
	if err != nil {
		return "(cannot show the spec: " + err.Error() + ")"
	}
	return string(y)
}

// logTail is how much of a task's output the job page shows at first.
const logTail = 64 << 10

// logs: GET /ui/jobs/{id}/logs?task=T[&follow=1]: a task's output as
// text from GET /v1/jobs/{id}/logs: its last 64 KiB, or with follow all
// of it, streamed as it is written until the task ends.
func (s *server) logs(w http.ResponseWriter, r *http.Request, u *session) {
	id, task := r.PathValue("id"), r.URL.Query().Get("task")
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	follow := r.URL.Query().Get("follow") != ""
	if follow {
		q.Set("follow", "true")
		w.Header().Set("X-Accel-Buffering", "no") // proxies must not hold the stream back
		tw := &textErrors{ResponseWriter: w}
		s.api.ServeHTTP(tw, apiRequest(r, u, http.MethodGet, jobPath(id, "/logs?"+q.Encode()), nil))
		tw.finish()
		return
	}
	resp := s.call(r, u, http.MethodGet, jobPath(id, "/logs?"+q.Encode()), nil)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if resp.status != http.StatusOK {
		w.WriteHeader(resp.status)
		_, _ = fmt.Fprintln(w, resp.message())
		return
	}
	b := resp.body.Bytes()
	if len(b) > logTail {
		b = b[len(b)-logTail:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
		_, _ = fmt.Fprintf(w, "(… earlier output not shown: the last %d KiB follow; Follow shows all of it)\n", logTail>>10)
	}
	_, _ = w.Write(b)
}

// cancel: POST /ui/jobs/{id}/cancel, through POST /v1/jobs/{id}/cancel.
func (s *server) cancel(w http.ResponseWriter, r *http.Request, u *session) {
	id := r.PathValue("id")
	resp := s.call(r, u, http.MethodPost, jobPath(id, "/cancel"), nil)
	s.afterWrite(w, r, u, resp, id, "cancel")
}

// scale: POST /ui/jobs/{id}/scale with replicas, through POST
// /v1/jobs/{id}/scale.
func (s *server) scale(w http.ResponseWriter, r *http.Request, u *session) {
	id := r.PathValue("id")
	n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("replicas")))
	if err != nil {
		s.fail(w, r, u, http.StatusBadRequest, fmt.Sprintf("replicas %q is not a number: use a whole number from 0 (park the service) to %d", r.PostFormValue("replicas"), structs.MaxReplicas))
		return
	}
	body, _ := json.Marshal(wire.ScaleRequest{Replicas: &n})
	resp := s.call(r, u, http.MethodPost, jobPath(id, "/scale"), body)
	s.afterWrite(w, r, u, resp, id, "scale")
}

// afterWrite sends the browser back to the job page, or shows the API's
// refusal.
func (s *server) afterWrite(w http.ResponseWriter, r *http.Request, u *session, resp *response, id, done string) {
	if resp.status != http.StatusOK {
		s.fail(w, r, u, resp.status, resp.message())
		return
	}
	if live(r) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
}
