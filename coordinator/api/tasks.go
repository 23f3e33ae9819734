package api

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/atom-sched/atom/coordinator/api/wire"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// maxEventMessage bounds a heartbeat's message.
const maxEventMessage = 4096

// taskAuth is what an allocation token proved.
type taskAuth int

const (
	tokenNone    taskAuth = iota // matches no task of the job (or there is no such task)
	tokenSibling                 // another task of the same job
	tokenOwn                     // the task itself
)

// checkTaskToken matches tok against task id's allocation token and, when
// that fails, against its siblings'. Only allocation tokens count: user
// tokens, admins' included, are not accepted here.
func (s *server) checkTaskToken(id structs.TaskID, tok string) (auth taskAuth, job structs.JobID, ts structs.TaskState) {
	s.store.Read(func(st *state.State) {
		t := st.Tasks[id]
		if t == nil {
			return
		}
		job, ts = t.Job, t.State
		if sameToken(tok, st.Tokens[id]) {
			auth = tokenOwn
			return
		}
		for _, o := range st.TasksOf(t.Job) {
			if sameToken(tok, st.Tokens[o.ID]) {
				auth = tokenSibling
				return
			}
		}
	})
	return auth, job, ts
}

var errNoTaskToken = errorf(http.StatusUnauthorized, "no allocation token: atom sends Authorization: Bearer $ATOM_TOKEN, the token of its own task")

func errBadTaskToken(id structs.TaskID) error {
	return errorf(http.StatusUnauthorized, "the token is not an allocation token of task %s or its job: use the task's own allocation token (user tokens are not accepted)", trunc(string(id)))
}

// heartbeat: POST /v1/tasks/{id}/heartbeat, authenticated only by the
// task's own allocation token. The body is a task event (state Running,
// Succeeded or Failed); it answers what the coordinator wants of the task.
func (s *server) heartbeat(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	id := structs.TaskID(r.PathValue("id"))
	tok, ok := bearer(r)
	if !ok {
		return 0, nil, errNoTaskToken
	}
	switch auth, job, ts := s.checkTaskToken(id, tok); {
	case auth == tokenNone:
		return 0, nil, errBadTaskToken(id)
	case auth == tokenSibling:
		return 0, nil, errorf(http.StatusForbidden, "the token belongs to another task of job %s: each task reports with its own allocation token", job)
	case !ts.HoldsResources():
		return 0, nil, errorf(http.StatusConflict, "task %s has ended (%s): stop it", id, ts)
	}
	var ev wire.Heartbeat
	if err := decodeJSON(r, &ev, "a heartbeat"); err != nil {
		return 0, nil, err
	}
	now := s.clock()
	switch {
	case ev.Task != "" && ev.Task != id:
		return 0, nil, errorf(http.StatusBadRequest, "task %q in the body does not match %q in the path: leave it out or make them the same", trunc(string(ev.Task)), trunc(string(id)))
	case ev.State != "" && ev.State != structs.TaskRunning && ev.State != structs.TaskSucceeded && ev.State != structs.TaskFailed:
		return 0, nil, &structs.FieldError{Field: "state", Msg: strconv.Quote(trunc(string(ev.State))) + " is not allowed: use Running, Succeeded or Failed, or leave it out for a plain heartbeat"}
	case len(ev.Message) > maxEventMessage || !utf8.ValidString(ev.Message):
		return 0, nil, &structs.FieldError{Field: "message", Msg: "is not allowed: use at most 4096 bytes of UTF-8"}
	}
	ev.Task = id
	if ev.Time.IsZero() || ev.Time.After(now) {
		ev.Time = now // the agent's clock may be off; never record the future
	}
	if err := s.store.Heartbeat(id, tok, ev); err != nil {
		return 0, nil, err
	}
	out := wire.HeartbeatResponse{Task: id}
	s.store.Read(func(st *state.State) {
		if t := st.Tasks[id]; t != nil {
			out.State, out.StopReason = t.State, t.StopReason
		}
	})
	return http.StatusOK, out, nil
}

// peers: GET /v1/tasks/{id}/peers with the allocation token of any task of
// the same job: the tasks of the job's current attempt, by index.
func (s *server) peers(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	id := structs.TaskID(r.PathValue("id"))
	tok, ok := bearer(r)
	if !ok {
		return 0, nil, errNoTaskToken
	}
	auth, job, _ := s.checkTaskToken(id, tok)
	if auth == tokenNone {
		return 0, nil, errBadTaskToken(id)
	}
	out := wire.PeerList{Job: job, Peers: []wire.Peer{}}
	s.store.Read(func(st *state.State) {
		j := st.Jobs[job]
		if j == nil {
			return
		}
		out.Attempt = j.Attempt
		for _, t := range st.TasksOf(job) {
			if t.Attempt == j.Attempt {
				out.Peers = append(out.Peers, wire.Peer{Task: t.ID, Index: t.Index, Node: t.Node, State: t.State})
			}
		}
	})
	return http.StatusOK, out, nil
}
