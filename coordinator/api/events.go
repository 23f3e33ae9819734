package api

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Default and most events one answer holds.
const (
	defaultEventLimit = state.MaxJobEvents
	maxEventLimit     = state.MaxRecentEvents
)

// eventQuery is the query of the events endpoints: since (an event
// number, or an RFC 3339 time) and limit.
type eventQuery struct {
	seq   uint64
	time  time.Time
	limit int
}

func parseEventQuery(r *http.Request) (eventQuery, error) {
	q := r.URL.Query()
	for k := range q {
		if k != "since" && k != "limit" {
			return eventQuery{}, errorf(http.StatusBadRequest, "query parameter %q is not known: use since or limit", trunc(k))
		}
	}
	out := eventQuery{limit: defaultEventLimit}
	if v := q.Get("since"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			out.seq = n
		} else if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			out.time = t
		} else {
			return eventQuery{}, errorf(http.StatusBadRequest, "since %q is not allowed: use an event number (seq, e.g. an earlier answer's latest) or an RFC 3339 time such as 2026-12-03T13:30:00Z", trunc(v))
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEventLimit {
			return eventQuery{}, errorf(http.StatusBadRequest, "limit %q is not allowed: use a whole number from 1 to %d (default %d)", trunc(v), maxEventLimit, defaultEventLimit)
		}
		out.limit = n
	}
	return out, nil
}

func (q eventQuery) match(e structs.Event) bool { return e.Seq > q.seq && !e.Time.Before(q.time) }

// pick sets l's events to the newest q.limit events of evs (in the order
// recorded) that q and keep match, in the order they happened
// (structs.CompareEvents).
func (q eventQuery) pick(l *wire.EventList, evs []structs.Event, keep func(structs.Event) bool) {
	var out []structs.Event
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if !q.match(e) || !keep(e) {
			continue
		}
		if len(out) == q.limit {
			l.Truncated = true
			break
		}
		out = append(out, e)
	}
	l.Events = make([]structs.Event, len(out))
	for i, e := range out {
		l.Events[len(out)-1-i] = e
	}
	slices.SortFunc(l.Events, structs.CompareEvents)
}

// jobEvents: GET /v1/jobs/{id}/events?since=&limit=: the job's events,
// oldest first (its newest 100 are kept), to whoever may see the job.
func (s *server) jobEvents(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	q, err := parseEventQuery(r)
	if err != nil {
		return 0, nil, err
	}
	js, err := s.jobStatus(r.Context(), structs.JobID(r.PathValue("id")), c)
	if err != nil {
		return 0, nil, err
	}
	out := wire.EventList{Job: js.Job.ID}
	s.store.Read(func(st *state.State) {
		h := st.Events[js.Job.ID]
		out.Dropped, out.Latest = h.Dropped, st.EventSeq
		q.pick(&out, h.Events, func(structs.Event) bool { return true })
	})
	return http.StatusOK, out, nil
}

// listEvents: GET /v1/events?since=&limit=: the cluster's recent events
// (its newest 1000 are kept), oldest first, of the jobs the caller may
// see (admins: all).
func (s *server) listEvents(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	q, err := parseEventQuery(r)
	if err != nil {
		return 0, nil, err
	}
	var out wire.EventList
	s.store.Read(func(st *state.State) {
		mine := projects(st, c.user)
		out.Latest = st.EventSeq
		q.pick(&out, st.Recent, func(e structs.Event) bool {
			j := st.Jobs[e.Job]
			return j != nil && c.canSeeJob(j, mine)
		})
	})
	return http.StatusOK, out, nil
}
