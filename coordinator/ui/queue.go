package ui

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// queuePerPage is the Queue table's page size.
const queuePerPage = 100

// pendingSince is when j last became pending: its wait is measured from
// there, and the scheduler orders by it.
func pendingSince(j *structs.Job) time.Time {
	if !j.PendingSince.IsZero() {
		return j.PendingSince
	}
	return j.SubmitTime
}

// queued is the queue in the scheduler's order (sched.Order): every job
// that wants replicas placed (pending jobs, services short of replicas),
// each with its place among all of them, and whether u may see it.
type queued struct {
	job     *structs.Job
	place   int
	visible bool
}

func (s *server) readQueue(u *session, now time.Time) ([]queued, *sched.FairShare) {
	var jobs []*structs.Job
	var v api.Viewer
	var fs *sched.FairShare
	s.store.Read(func(st *state.State) {
		v = api.ViewerOf(st, u.user)
		jobs = st.Pending()
		fs = st.FairShareOrder(st.Jobs)
	})
	sched.Order(jobs, fs, now)
	out := make([]queued, len(jobs))
	for i, j := range jobs {
		out[i] = queued{job: j, place: i + 1, visible: v.Job(j)}
	}
	return out, fs
}

// shareOf says where j's scope stands against its fair share ("user:u1
// at 140%"), and for a project's job where its owner stands among the
// project's members.
func shareOf(j *structs.Job, fs *sched.FairShare) string {
	sc := j.ChargeScope()
	s := fmt.Sprintf("%s at %.0f%%", sc, fs.Scopes[sc]*100)
	if j.Project != "" {
		s += fmt.Sprintf("; %s at %.0f%% among its members", j.Owner, fs.Members[j.Project][j.Owner]*100)
	}
	return s
}

// whyView is a why-pending reason in words: the scheduler's message,
// one line per fact (quota asked, used and limit; node counts by reason;
// fragmentation; what it waits for), under a tag that says whether the
// job can ever fit.
type whyView struct {
	Message   string // the first fact
	Details   []string
	NeverFits bool
	Known     bool // the scheduler has looked at the job
}

func newWhyView(w *sched.Why, j *structs.Job) whyView {
	if w == nil {
		msg := "the scheduler has not looked at this job yet"
		if j.Reason != "" {
			msg = "pending (" + j.Reason + "): the scheduler has not looked at it since"
		}
		return whyView{Message: msg}
	}
	v := whyView{NeverFits: w.NeverFits, Known: true}
	parts := strings.Split(w.Message, "; ")
	if len(parts) > 1 && (parts[0] == "does not fit now" || parts[0] == "can never fit") {
		parts = parts[1:] // the tag says it
	}
	v.Message, v.Details = parts[0], parts[1:]
	return v
}

// whys asks the store for the why-pending reasons of jobs, a few at a
// time: on a follower each is a request to the leader.
func (s *server) whys(jobs []*structs.Job) []*sched.Why {
	out := make([]*sched.Why, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i] = s.store.Why(j.ID)
			<-sem
		}()
	}
	wg.Wait()
	return out
}

type queueRow struct {
	Place                                      int
	ID, Name, Owner, Project, Kind, Priority   string
	PriorityClass, Asks, Waiting, Since, Share string
	Why                                        whyView
}

type prioritySummary struct {
	Priority, Class, Oldest string
	Job                     string // the job waiting longest, when known
	N                       int
}

type queueView struct {
	Total, Hidden int // all queued jobs; those the user may not see
	ByPriority    []prioritySummary
	Rows          []queueRow
	Pager         pager
}

// queue: GET /ui/queue: the jobs the user may see that wait to be
// placed, in the scheduler's order, with why each waits.
func (s *server) queue(w http.ResponseWriter, r *http.Request, u *session) {
	now := s.clock()
	all, fs := s.readQueue(u, now)
	var mine []queued
	oldest := map[structs.Priority]time.Time{}
	count := map[structs.Priority]int{}
	for _, q := range all {
		if !q.visible {
			continue
		}
		mine = append(mine, q)
		p := q.job.Priority
		count[p]++
		if t := pendingSince(q.job); oldest[p].IsZero() || t.Before(oldest[p]) {
			oldest[p] = t
		}
	}
	v := queueView{Total: len(all), Hidden: len(all) - len(mine)}
	for _, p := range []structs.Priority{structs.PriorityHigh, structs.PriorityNormal, structs.PriorityLow} {
		if count[p] > 0 {
			v.ByPriority = append(v.ByPriority, prioritySummary{Priority: p.String(), Class: priorityClass(p), N: count[p], Oldest: ago(oldest[p], now)})
		}
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	v.Pager = newPager(len(mine), max(page, 1), queuePerPage, func(p int) string { return "/ui/queue?page=" + strconv.Itoa(p) })
	rows := mine[max(0, v.Pager.From-1):v.Pager.To]
	jobs := make([]*structs.Job, len(rows))
	for i, q := range rows {
		jobs[i] = q.job
	}
	for i, why := range s.whys(jobs) {
		j := rows[i].job
		sh := j.ShapeAt(j.Shape)
		v.Rows = append(v.Rows, queueRow{Place: rows[i].place, ID: string(j.ID), Name: j.Name, Owner: string(j.Owner),
			Project: string(j.Project), Kind: string(j.Kind), Priority: j.Priority.String(), PriorityClass: priorityClass(j.Priority),
			Asks:    fmt.Sprintf("%d × %s", sh.Replicas, perReplica(sh.Resources)),
			Waiting: ago(pendingSince(j), now), Since: stamp(pendingSince(j)), Share: shareOf(j, fs), Why: newWhyView(why, j)})
	}
	s.render(w, r, u, http.StatusOK, "queue", "Queue", v)
}
