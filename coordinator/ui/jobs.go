package ui

import (
	"cmp"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// jobsPerPage is the Jobs table's page size.
const jobsPerPage = 50

// jobEntry is a job with what the tables show beside it.
type jobEntry struct {
	job        *structs.Job
	start, end time.Time // its first start, in any attempt; when it ended
}

// duration is how long the job has run (to now while it runs).
func (e jobEntry) duration(now time.Time) time.Duration {
	switch {
	case e.start.IsZero():
		return 0
	case !e.end.IsZero():
		return e.end.Sub(e.start)
	case e.job.State.Ended():
		return 0
	}
	return now.Sub(e.start)
}

// visibleJobs reads the jobs u may see that keep (nil: all), with when
// they ended; fillStarts adds their start times.
func (s *server) visibleJobs(u *session, keep func(*structs.Job) bool) (out []jobEntry, v api.Viewer) {
	s.store.Read(func(st *state.State) {
		v = api.ViewerOf(st, u.user)
		for _, j := range st.Jobs {
			if v.Job(j) && (keep == nil || keep(j)) {
				out = append(out, jobEntry{job: j, end: st.Ended[j.ID]})
			}
		}
	})
	return out, v
}

// fillStarts sets each entry's start: when its job first started, in any
// attempt, as job list's DURATION counts; for a job that started before
// jobs kept their first start, when the first task of its current
// attempt started. A few entries (a page) look up their tasks; many
// (ordering by duration) take one pass over all tasks.
func (s *server) fillStarts(es []jobEntry) {
	for i := range es {
		es[i].start = es[i].job.FirstStartedAt
	}
	first := func(e *jobEntry, t *structs.Task) {
		if e.job.FirstStartedAt.IsZero() && t.Attempt == e.job.Attempt && !t.StartedAt.IsZero() && (e.start.IsZero() || t.StartedAt.Before(e.start)) {
			e.start = t.StartedAt
		}
	}
	s.store.Read(func(st *state.State) {
		if len(es) <= 2*jobsPerPage {
			for i := range es {
				for _, t := range st.TasksOf(es[i].job.ID) {
					first(&es[i], t)
				}
			}
			return
		}
		idx := make(map[structs.JobID]int, len(es))
		for i, e := range es {
			idx[e.job.ID] = i
		}
		for _, t := range st.Tasks {
			if i, ok := idx[t.Job]; ok {
				first(&es[i], t)
			}
		}
	})
}

// jobQuery is the Jobs page's filters, order and page.
type jobQuery struct {
	State, Owner, Project, Kind, Priority, Text string
	Sort                                        string // a column key, "-" first for descending
	Page                                        int    // from 1
}

func parseJobQuery(q url.Values) jobQuery {
	jq := jobQuery{State: q.Get("state"), Owner: q.Get("owner"), Project: q.Get("project"), Kind: q.Get("kind"),
		Priority: q.Get("priority"), Text: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort")}
	if _, ok := jobOrders[strings.TrimPrefix(jq.Sort, "-")]; !ok {
		jq.Sort = "-submitted"
	}
	jq.Page, _ = strconv.Atoi(q.Get("page"))
	jq.Page = max(jq.Page, 1)
	return jq
}

// values is the query as URL values; zero fields are left out.
func (q jobQuery) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"state": q.State, "owner": q.Owner, "project": q.Project, "kind": q.Kind,
		"priority": q.Priority, "q": q.Text} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if q.Sort != "-submitted" {
		v.Set("sort", q.Sort)
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	return v
}

func (q jobQuery) url() string {
	if e := q.values().Encode(); e != "" {
		return "/ui/jobs?" + e
	}
	return "/ui/jobs"
}

// match reports whether j passes the filters. State "active" is every
// state that has not ended.
func (q jobQuery) match(j *structs.Job) bool {
	switch {
	case q.State == "active" && j.State.Ended(),
		q.State != "" && q.State != "active" && !strings.EqualFold(q.State, string(j.State)),
		q.Owner != "" && string(j.Owner) != q.Owner,
		q.Project != "" && string(j.Project) != q.Project,
		q.Kind != "" && string(j.Kind) != q.Kind,
		q.Priority != "" && j.Priority.String() != q.Priority:
		return false
	}
	return q.Text == "" || strings.Contains(string(j.ID), q.Text) || strings.Contains(j.Name, q.Text)
}

// jobOrders compares two jobs by a column, ascending.
var jobOrders = map[string]func(a, b jobEntry, now time.Time) int{
	"id":        func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.ID, b.job.ID) },
	"name":      func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.Name, b.job.Name) },
	"state":     func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.State, b.job.State) },
	"owner":     func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.Owner, b.job.Owner) },
	"project":   func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.Project, b.job.Project) },
	"kind":      func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.Kind, b.job.Kind) },
	"priority":  func(a, b jobEntry, _ time.Time) int { return cmp.Compare(a.job.Priority, b.job.Priority) },
	"gpus":      func(a, b jobEntry, _ time.Time) int { return cmp.Compare(gpus(a.job), gpus(b.job)) },
	"submitted": func(a, b jobEntry, _ time.Time) int { return a.job.SubmitTime.Compare(b.job.SubmitTime) },
	"duration":  func(a, b jobEntry, now time.Time) int { return cmp.Compare(a.duration(now), b.duration(now)) },
}

// column is a sortable table header.
type column struct {
	Label, URL, Arrow string
}

// columns are the headers of the jobs table, each linking to the order
// by it (descending first for numbers and times, as people want them).
func (q jobQuery) columns() []column {
	var out []column
	for _, c := range []struct{ label, key string }{{"Job", "id"}, {"Name", "name"}, {"State", "state"}, {"Owner", "owner"},
		{"Project", "project"}, {"Kind", "kind"}, {"Priority", "priority"}, {"GPUs", "gpus"}, {"Age", "submitted"}, {"Duration", "duration"}} {
		col := column{Label: c.label}
		n := q
		n.Page = 1
		switch q.Sort {
		case c.key:
			col.Arrow, n.Sort = "▲", "-"+c.key
		case "-" + c.key:
			col.Arrow, n.Sort = "▼", c.key
		default:
			n.Sort = c.key
			if c.key == "gpus" || c.key == "duration" || c.key == "priority" || c.key == "submitted" {
				n.Sort = "-" + c.key
			}
		}
		// Age reads the other way round: newest first is the shortest age.
		if c.key == "submitted" && col.Arrow != "" {
			col.Arrow = map[string]string{"▲": "▼", "▼": "▲"}[col.Arrow]
		}
		col.URL = n.url()
		out = append(out, col)
	}
	return out
}

// jobRow is one row of a jobs table.
type jobRow struct {
	ID, Name, State, StateClass, Reason, Owner, Project, Kind    string
	Priority, PriorityClass, Resources, Age, Duration, Submitted string
	GPUs                                                         string // "8 A100"
	Replicas                                                     int
}

func newJobRow(e jobEntry, now time.Time) jobRow {
	j := e.job
	s := j.ShapeAt(j.Shape)
	r := jobRow{ID: string(j.ID), Name: j.Name, State: string(j.State), StateClass: jobStateClass(j.State), Reason: j.Reason,
		Owner: string(j.Owner), Project: string(j.Project), Kind: string(j.Kind), Priority: j.Priority.String(),
		PriorityClass: priorityClass(j.Priority), Resources: perReplica(s.Resources), Age: ago(j.SubmitTime, now),
		Submitted: stamp(j.SubmitTime), Replicas: s.Replicas}
	if n := gpus(j); n > 0 {
		r.GPUs = strconv.FormatInt(n, 10) + " " + orAny(s.Resources.AccelType)
	}
	if d := e.duration(now); d > 0 {
		r.Duration = human(d)
	}
	return r
}

// pager is a table's position: rows From-To of Total, with links.
type pager struct {
	From, To, Total  int
	Prev, Next, Last string
	Page, Pages      int
}

func newPager(total, page, size int, link func(page int) string) pager {
	pages := max(1, (total+size-1)/size)
	page = min(page, pages)
	p := pager{Total: total, Page: page, Pages: pages, From: min(total, (page-1)*size+1), To: min(total, page*size)}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next, p.Last = link(page+1), link(pages)
	}
	return p
}

type jobsView struct {
	Query                     jobQuery
	Columns                   []column
	Rows                      []jobRow
	Pager                     pager
	States, Kinds, Priorities []string
	Owners, Projects          []string // seen among the jobs the user may see
	Counts                    []stateCount
}

type stateCount struct {
	State, Class, URL string
	N                 int
}

// jobs: GET /ui/jobs: the jobs the user may see, filtered, ordered and
// paged on the server.
func (s *server) jobs(w http.ResponseWriter, r *http.Request, u *session) {
	q := parseJobQuery(r.URL.Query())
	now := s.clock()
	all, _ := s.visibleJobs(u, nil)
	v := jobsView{Query: q, Columns: q.columns(),
		States:     []string{"active", "Pending", "Scheduled", "Running", "Succeeded", "Failed", "Cancelled"},
		Kinds:      []string{"command", "mpi", "spark", "service"},
		Priorities: []string{"high", "normal", "low"}}
	owners, projects, counts := map[string]bool{}, map[string]bool{}, map[structs.JobState]int{}
	var rows []jobEntry
	for _, e := range all {
		owners[string(e.job.Owner)] = true
		if e.job.Project != "" {
			projects[string(e.job.Project)] = true
		}
		if q.match(e.job) {
			rows = append(rows, e)
			counts[e.job.State]++
		}
	}
	v.Owners, v.Projects = slices.Sorted(maps.Keys(owners)), slices.Sorted(maps.Keys(projects))
	for _, st := range []structs.JobState{structs.JobPending, structs.JobScheduled, structs.JobRunning, structs.JobSucceeded, structs.JobFailed, structs.JobCancelled} {
		if counts[st] > 0 {
			n := q
			n.State, n.Page = string(st), 1
			v.Counts = append(v.Counts, stateCount{State: string(st), Class: jobStateClass(st), N: counts[st], URL: n.url()})
		}
	}
	key, desc := strings.TrimPrefix(q.Sort, "-"), strings.HasPrefix(q.Sort, "-")
	if key == "duration" {
		s.fillStarts(rows)
	}
	order := jobOrders[key]
	slices.SortFunc(rows, func(a, b jobEntry) int {
		c := order(a, b, now)
		if desc {
			c = -c
		}
		if c == 0 {
			c = cmp.Compare(a.job.ID, b.job.ID)
		}
		return c
	})
	v.Pager = newPager(len(rows), q.Page, jobsPerPage, func(p int) string { n := q; n.Page = p; return n.url() })
	page := rows[max(0, v.Pager.From-1):v.Pager.To]
	if key != "duration" {
		s.fillStarts(page)
	}
	for _, e := range page {
		v.Rows = append(v.Rows, newJobRow(e, now))
	}
	s.render(w, r, u, http.StatusOK, "jobs", "Jobs", v)
}
