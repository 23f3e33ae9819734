package sched

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// FairShare is what ordering reads of fair share (Snapshot.FairShare),
// computed once per cycle (Positions): each scope's position, and each
// project member's among the project's members.
//
// A position is a share of usage over a share of weight: a scope's
// part of the usage of the scopes that compete now (have jobs that have
// not ended) over its part of their weights. 1 is exactly its fair
// share, 0.5 half of it, 2 twice; 0 when none of them has usage. A
// scope or member missing is at 0.
type FairShare struct {
	Scopes  map[structs.Scope]float64
	Members map[structs.ProjectID]map[structs.UserID]float64
	// Aging is how long a job waits to make up one whole fair share
	// (its key falls by 1); 0: structs.DefaultAging.
	Aging time.Duration
}

// The order of one cycle (Schedule step 2). Higher priority first. Within
// a priority, each job has a key:
//
//	key = position of its scope − time pending / Aging
//
// and the lowest key goes first: the scope furthest below its fair share
// first, and each hour (Aging, structs.DefaultAging) a job waits counts
// as one whole fair share, so nothing starves: a job whose scope is at
// position p goes ahead of every job submitted p × Aging or more after
// it (whose scope is at 0 or more), so it waits at most for those that
// came before that. Equal keys go by time pending, then ID, so the order
// is total; without usage (every position 0) it is oldest first.
//
// A project's jobs are ordered among themselves the same way, by their
// owner's position among the project's members (Members): the project's
// queue is sorted by that key, and its head competes with other scopes'
// jobs by the project's key. Without FairShare (nil) the order is
// priority, then time pending, then ID.
//
// A job decided earlier takes the room it fits in before jobs behind it;
// a job that does not fit never stops the jobs behind it (backfill).
func order(jobs []*structs.Job, fs *FairShare, now time.Time) {
	if fs == nil {
		slices.SortFunc(jobs, func(a, b *structs.Job) int {
			if a.Priority != b.Priority {
				return int(b.Priority) - int(a.Priority)
			}
			return byAge(a, b)
		})
		return
	}
	aging := float64(cmp.Or(fs.Aging, structs.DefaultAging))
	// One entry per job, keys computed once; projects' jobs go to their
	// project's queue.
	singles := make([]entry, 0, len(jobs))
	queues := map[queueKey]*queue{}
	for _, j := range jobs {
		wait := float64(now.Sub(pendingSince(j))) / aging
		e := entry{j: j, key: fs.Scopes[j.ChargeScope()] - wait}
		if j.Project == "" {
			singles = append(singles, e)
			continue
		}
		k := queueKey{j.Priority, j.Project}
		q := queues[k]
		if q == nil {
			q = &queue{scope: fs.Scopes[j.ChargeScope()]}
			queues[k] = q
		}
		e.member = fs.Members[j.Project][j.Owner] - wait
		q.jobs = append(q.jobs, e)
	}
	slices.SortFunc(singles, func(a, b entry) int {
		if a.j.Priority != b.j.Priority {
			return int(b.j.Priority) - int(a.j.Priority)
		}
		return a.compare(b)
	})
	if len(queues) == 0 {
		for i, e := range singles {
			jobs[i] = e.j
		}
		return
	}
	// Merge: per priority, the singles in order and each project's queue
	// by its head's key.
	seen := map[structs.Priority]bool{}
	for k := range queues {
		seen[k.prio] = true
	}
	for i, e := range singles {
		if i == 0 || e.j.Priority != singles[i-1].j.Priority {
			seen[e.j.Priority] = true
		}
	}
	prios := slices.Sorted(maps.Keys(seen))
	slices.Reverse(prios)
	out := jobs[:0]
	for _, p := range prios {
		var h queueHeap
		for k, q := range queues {
			if k.prio != p {
				continue
			}
			slices.SortFunc(q.jobs, func(a, b entry) int {
				return cmp.Or(cmp.Compare(a.member, b.member), a.compare(b))
			})
			q.head(aging, now)
			h = append(h, q)
		}
		heap.Init(&h)
		for len(singles) > 0 && singles[0].j.Priority == p || len(h) > 0 {
			if len(h) == 0 || len(singles) > 0 && singles[0].j.Priority == p && singles[0].compare(h[0].jobs[0]) <= 0 {
				out = append(out, singles[0].j)
				singles = singles[1:]
				continue
			}
			q := h[0]
			out = append(out, q.jobs[0].j)
			if q.jobs = q.jobs[1:]; len(q.jobs) == 0 {
				heap.Pop(&h)
				continue
			}
			q.head(aging, now)
			heap.Fix(&h, 0)
		}
	}
}

// entry is one job with its keys: key as a scope's job, member within
// its project.
type entry struct {
	j      *structs.Job
	key    float64
	member float64
}

func (a entry) compare(b entry) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return byAge(a.j, b.j)
}

func byAge(a, b *structs.Job) int {
	if c := pendingSince(a).Compare(pendingSince(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

type queueKey struct {
	prio    structs.Priority
	project structs.ProjectID
}

// queue is one project's jobs of one priority, best member key first.
type queue struct {
	scope float64 // the project's position
	jobs  []entry
}

// head gives the queue's head its key as the project's job.
func (q *queue) head(aging float64, now time.Time) {
	e := &q.jobs[0]
	e.key = q.scope - float64(now.Sub(pendingSince(e.j)))/aging
}

type queueHeap []*queue

func (h queueHeap) Len() int           { return len(h) }
func (h queueHeap) Less(i, j int) bool { return h[i].jobs[0].compare(h[j].jobs[0]) < 0 }
func (h queueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *queueHeap) Push(x any)        { *h = append(*h, x.(*queue)) }
func (h *queueHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	return q
}

// Order sorts jobs into the order a cycle decides them in (order): the
// API answers a job's place in the queue with it, and replays order as
// the coordinator does.
func Order(jobs []*structs.Job, fs *FairShare, now time.Time) { order(jobs, fs, now) }

// QueuePlace is a pending job's place in the scheduler's order, among
// the pending jobs of its priority that start in the same pool (its
// project's pool, or the public pool), and its scope's fair-share
// standing.
type QueuePlace struct {
	Place    int              `json:"place"` // 1: tried first
	Of       int              `json:"of"`
	Priority structs.Priority `json:"priority"`
	Pool     structs.PoolID   `json:"pool"`
	Scope    structs.Scope    `json:"scope"`
	// Standing is the scope's; Member and MemberStanding, for a
	// project's job, its owner's among the project's members.
	Standing       Standing       `json:"standing"`
	Member         structs.UserID `json:"member,omitempty"`
	MemberStanding *Standing      `json:"memberStanding,omitempty"`
}

// String says it in words: "3rd of 12 normal jobs waiting in public;
// user:alice is at 140% of its fair share".
func (q QueuePlace) String() string {
	s := fmt.Sprintf("%s of %d %s jobs waiting in %s; %s is at %s of its fair share",
		ordinal(q.Place), q.Of, q.Priority, q.Pool, q.Scope, percent(q.Standing.Position))
	if q.MemberStanding != nil {
		s += fmt.Sprintf(", %s at %s of theirs among its members", q.Member, percent(q.MemberStanding.Position))
	}
	return s
}

func percent(p float64) string { return fmt.Sprintf("%.0f%%", p*100) }

// ordinal writes 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
