package api

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
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
// that fails, against its siblings'; with launch, a task's launch token
// (structs.LaunchToken, what atom gives the job) counts as its allocation
// token. Only these count: user tokens, admins' included, are not
// accepted here. t is task id (nil if there is no such task) and owner
// the task whose token tok is.
func (s *server) checkTaskToken(id structs.TaskID, tok string, launch bool) (auth taskAuth, t, owner *structs.Task) {
	matches := func(alloc string) bool {
		return sameToken(tok, alloc) || (launch && alloc != "" && sameToken(tok, structs.LaunchToken(alloc)))
	}
	s.store.Read(func(st *state.State) {
		if t = st.Tasks[id]; t == nil {
			return
		}
		if matches(st.Tokens[id]) {
			auth, owner = tokenOwn, t
			return
		}
		for _, o := range st.TasksOf(t.Job) {
			if matches(st.Tokens[o.ID]) {
				auth, owner = tokenSibling, o
				return
			}
		}
	})
	return auth, t, owner
}

var errNoTaskToken = errorf(http.StatusUnauthorized, "no allocation token: atom sends Authorization: Bearer $ATOM_TOKEN, the token of its own task")

func errBadTaskToken(id structs.TaskID) error {
	return errorf(http.StatusUnauthorized, "the token is not an allocation token of task %s or its job: use the task's own allocation token (user tokens are not accepted)", trunc(string(id)))
}

// heartbeat: POST /v1/tasks/{id}/heartbeat, authenticated only by the
// task's own allocation token. The body is a task event (state Running,
// Succeeded or Failed); it answers what the coordinator wants of the task.
// A server whose state lags and does not know the task yet (a follower
// that has not applied its placement) passes the heartbeat on to the
// leader, which checks the token, instead of refusing it: atom would
// otherwise take the refusal for good and drop its final report (found by
// make chaos: a job that succeeded was declared lost).
func (s *server) heartbeat(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	id := structs.TaskID(r.PathValue("id"))
	tok, ok := bearer(r)
	if !ok {
		return 0, nil, errNoTaskToken
	}
	auth, t, _ := s.checkTaskToken(id, tok, false)
	passOn := false
	if l, ok := s.store.(Lagging); ok && auth == tokenNone && t == nil {
		switch {
		case l.Lagging():
			passOn = true // not known here yet: Store.Heartbeat asks the leader
		default:
			if err := l.CatchUp(r.Context()); err != nil { // a leader that may have been deposed
				return 0, nil, errorf(http.StatusServiceUnavailable, "task %s is not known to this server, which cannot confirm it leads (%v): retry", trunc(string(id)), err)
			}
		}
	}
	switch {
	case passOn:
	case auth == tokenNone:
		return 0, nil, errBadTaskToken(id)
	case auth == tokenSibling:
		return 0, nil, errorf(http.StatusForbidden, "the token belongs to another task of job %s: each task reports with its own allocation token", t.Job)
	case !t.State.HoldsResources():
		return 0, nil, errorf(http.StatusConflict, "task %s has ended (%s): stop it", id, t.State)
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
	case ev.Endpoint != "" && ev.State != structs.TaskRunning:
		return 0, nil, &structs.FieldError{Field: "endpoint", Msg: "is only allowed with state Running"}
	case ev.Endpoint != "":
		if err := structs.CheckEndpoint(ev.Endpoint); err != nil {
			return 0, nil, err
		}
	}
	ev.Task = id
	if ev.Time.IsZero() || ev.Time.After(now) {
		ev.Time = now // the agent's clock may be off; never record the future
	}
	if err := state.CheckReason(ev); err != nil {
		return 0, nil, err // reason PreflightFailed (with state Failed) or none
	}
	if err := s.store.Heartbeat(id, tok, ev); err != nil {
		return 0, nil, err
	}
	out := wire.HeartbeatResponse{Task: id}
	s.store.Read(func(st *state.State) {
		if t := st.Tasks[id]; t != nil {
			out.State, out.StopReason = t.State, t.StopReason
			if !t.NoticeUntil.IsZero() && t.State == structs.TaskStopping {
				out.NoticeUntil = t.NoticeUntil
				if j := st.Jobs[t.Job]; j != nil && j.PreemptNotice != nil {
					out.NoticeSignal = j.PreemptNotice.Signal
				}
			}
		}
	})
	return http.StatusOK, out, nil
}

// peers: GET /v1/tasks/{id}/peers with the allocation token of any task of
// the same job: the tasks of the job's current attempt that hold
// resources, by index, with the endpoints their agents reported. Both task
// id and the token's task must be live tasks of the current attempt:
// nothing from an earlier attempt is reused (C04). atom rsh's servers rely
// on this to verify launch requests.
func (s *server) peers(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	id := structs.TaskID(r.PathValue("id"))
	tok, ok := bearer(r)
	if !ok {
		return 0, nil, errNoTaskToken
	}
	auth, t, owner := s.checkTaskToken(id, tok, true)
	if auth == tokenNone {
		return 0, nil, errBadTaskToken(id)
	}
	out := wire.PeerList{Job: t.Job, Peers: []wire.Peer{}}
	var err error
	s.store.Read(func(st *state.State) {
		j := st.Jobs[t.Job]
		if j == nil {
			err = errorf(http.StatusConflict, "job %s has been removed", t.Job)
			return
		}
		if err = stale(j, owner, "the token's task"); err != nil {
			return
		}
		if err = stale(j, t, "task"); err != nil {
			return
		}
		out.Attempt = j.Attempt
		for _, p := range st.TasksOf(j.ID) {
			if p.Attempt == j.Attempt && p.State.HoldsResources() {
				out.Peers = append(out.Peers, wire.Peer{Task: p.ID, Index: p.Index, Node: p.Node, State: p.State, Endpoint: p.Endpoint})
			}
		}
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// stale refuses (403) a task that has ended or belongs to an earlier
// attempt of job j.
func stale(j *structs.Job, t *structs.Task, what string) error {
	switch {
	case !t.State.HoldsResources():
		return errorf(http.StatusForbidden, "%s %s has ended (%s): only live tasks of job %s's current attempt may look up peers", what, t.ID, t.State, j.ID)
	case t.Attempt != j.Attempt:
		return errorf(http.StatusForbidden, "%s %s belongs to attempt %d of job %s, which is now at attempt %d: nothing from an earlier attempt is reused", what, t.ID, structs.AttemptNumber(t.Attempt), j.ID, structs.AttemptNumber(j.Attempt))
	}
	return nil
}
