package sched

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Fair-share usage. Each scope's usage is
// what its replicas held, in GPU-seconds (structs.FairShare.Rate), each
// second counting 2^(-age/halfLife): the integral, over every second a
// replica held resources since usage counting began (Since), of its rate
// decayed to now. Usage keeps it as of At; a later time t sees it times
// 2^(-(t-At)/halfLife).
//
// Whom a replica's use counts to (Account): the job's scope (user:NAME,
// or project:NAME for a project's job) unless the replica runs in its
// project's own pool, which is the project's and not shared; and, for a
// project's job wherever it runs, its owner among the project's
// members, by which a project's jobs are ordered among themselves.
//
// The state machine keeps it exact whatever order its commands come in,
// with three moves, each an integral of a replica's rate over a stretch
// of time, measured from At (Usage.add):
//
//   - a replica that starts holding (placed) adds its time before At
//     (none unless it was placed before the last accrual);
//   - an accrual to time now decays every figure to now and adds, for
//     each replica holding resources, its stretch from At (or from its
//     placement, if later) to now;
//   - a replica that stops holding adds its stretch from At (or its
//     placement) to its end: less than nothing when it ended before At,
//     as it was counted to At.
//
// So a replica holding resources has always been counted from when it
// was placed (or Since) to At (or not at all, if placed after At), and
// an ended one to its end: what RecomputeUsage sums from the tasks
// alone, and CheckUsage compares.

// Usage is every scope's fair-share usage, as of At.
type Usage struct {
	// Since is when counting began (the first accrual); zero: not yet.
	Since time.Time `json:"since,omitzero"`
	// At is the time the figures are as of: the last accrual's.
	At time.Time `json:"at,omitzero"`
	// Scopes holds each scope's usage; a scope missing has none.
	Scopes map[structs.Scope]float64 `json:"scopes,omitempty"`
	// Members holds, per project, each member's usage of the project's
	// jobs (in any pool).
	Members map[structs.ProjectID]map[structs.UserID]float64 `json:"members,omitempty"`
}

// PruneBelow is the usage under which a scope or member that holds
// nothing is forgotten (one GPU-second): usage stays bounded by the
// scopes that ran in the last few dozen half-lives.
const PruneBelow = 1.0

// Clone returns a copy of u that shares nothing with it.
func (u Usage) Clone() Usage {
	c := u
	c.Scopes = maps.Clone(u.Scopes)
	if u.Members != nil {
		c.Members = make(map[structs.ProjectID]map[structs.UserID]float64, len(u.Members))
		for p, m := range u.Members {
			c.Members[p] = maps.Clone(m)
		}
	}
	return c
}

// Account is whom one replica's use counts to.
type Account struct {
	Scope   structs.Scope // empty: in its project's own pool
	Project structs.ProjectID
	Member  structs.UserID // set with Project
}

// AccountOf returns whom task t of job j counts to; poolProject says
// which project a pool belongs to ("" for the public pool).
func AccountOf(j *structs.Job, t *structs.Task, poolProject func(structs.PoolID) structs.ProjectID) Account {
	a := Account{Scope: j.ChargeScope()}
	if j.Project != "" {
		a.Project, a.Member = j.Project, j.Owner
		if t.Pool != "" && t.Pool != structs.PublicPool && poolProject(t.Pool) == j.Project {
			a.Scope = ""
		}
	}
	return a
}

// twoTo is 2^(d/h), d and h durations.
func twoTo(d, h time.Duration) float64 { return math.Exp2(float64(d) / float64(h)) }

// add counts rate held from from to to (either way round: backwards is
// negative), as seen at At, for a. Times before Since count from Since.
func (u *Usage) add(f *structs.FairShare, a Account, rate float64, from, to time.Time) {
	if u.At.IsZero() || rate == 0 {
		return
	}
	from, to = later(from, u.Since), later(to, u.Since)
	if from.Equal(to) {
		return
	}
	h := f.HalfLifeOrDefault()
	v := rate * h.Seconds() / math.Ln2 * (twoTo(to.Sub(u.At), h) - twoTo(from.Sub(u.At), h))
	u.put(a, v)
}

// put adds v to a's figures.
func (u *Usage) put(a Account, v float64) {
	if a.Scope != "" {
		if u.Scopes == nil {
			u.Scopes = map[structs.Scope]float64{}
		}
		u.Scopes[a.Scope] += v
	}
	if a.Project != "" {
		if u.Members == nil {
			u.Members = map[structs.ProjectID]map[structs.UserID]float64{}
		}
		m := u.Members[a.Project]
		if m == nil {
			m = map[structs.UserID]float64{}
			u.Members[a.Project] = m
		}
		m[a.Member] += v
	}
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// Placed counts a replica that starts holding resources (placed at
// t.ScheduledAt): its time before At, if any.
func (u *Usage) Placed(f *structs.FairShare, a Account, t *structs.Task) {
	if t.ScheduledAt.Before(u.At) {
		u.add(f, a, f.Rate(t.Resources), t.ScheduledAt, u.At)
	}
}

// Ended counts a replica that stops holding resources at t.EndedAt (At
// when it has none; never before its placement): its stretch from At, or
// from its placement if that came after.
func (u *Usage) Ended(f *structs.FairShare, a Account, t *structs.Task) {
	end := t.EndedAt
	if end.IsZero() {
		end = u.At
	}
	u.add(f, a, f.Rate(t.Resources), later(u.At, t.ScheduledAt), later(end, t.ScheduledAt))
}

// Holding is one replica holding resources, as an accrual sees it.
type Holding struct {
	Account Account
	Rate    float64
	From    time.Time // its placement
}

// Accrue moves u to now: every figure decays to now, then each replica
// holding resources adds its stretch from At (or its placement, if that
// came after) to now. The first accrual starts counting (Since). A now
// not after At changes nothing (a new leader whose clock is behind the
// last one's). Scopes and members below PruneBelow that hold nothing
// are then forgotten.
func (u *Usage) Accrue(f *structs.FairShare, now time.Time, held []Holding) {
	switch {
	case u.At.IsZero():
		u.Since, u.At = now, now
		return
	case !now.After(u.At):
		return
	}
	h := f.HalfLifeOrDefault()
	decay := 1 / twoTo(now.Sub(u.At), h)
	for s, v := range u.Scopes {
		u.Scopes[s] = v * decay
	}
	for _, m := range u.Members {
		for id, v := range m {
			m[id] = v * decay
		}
	}
	// What a replica held since from, seen at now: rate times h/ln2
	// (1 - 2^-((now-from)/h)).
	k := h.Seconds() / math.Ln2
	per := k * (1 - decay)
	holds := map[Account]bool{}
	for _, x := range held {
		holds[Account{Scope: x.Account.Scope}] = true
		holds[Account{Project: x.Account.Project, Member: x.Account.Member}] = true
		switch {
		case !x.From.After(u.At):
			u.put(x.Account, x.Rate*per)
		case x.From.Before(now):
			u.put(x.Account, x.Rate*k*(1-1/twoTo(now.Sub(x.From), h)))
		}
	}
	u.At = now
	for s, v := range u.Scopes {
		if v < PruneBelow && !holds[Account{Scope: s}] {
			delete(u.Scopes, s)
		}
	}
	for p, m := range u.Members {
		for id, v := range m {
			if v < PruneBelow && !holds[Account{Project: p, Member: id}] {
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(u.Members, p)
		}
	}
}

// AsOf returns v, a figure of u, as of t (decayed from At).
func (u *Usage) AsOf(f *structs.FairShare, v float64, t time.Time) float64 {
	if v == 0 || !t.After(u.At) {
		return v
	}
	return v / twoTo(t.Sub(u.At), f.HalfLifeOrDefault())
}

// Standing is a scope's (or a project member's) place against its fair
// share, among those that compete now.
type Standing struct {
	Usage      float64 `json:"usage"`      // GPU-seconds, as of the usage's At
	Weight     float64 `json:"weight"`     // its fair-share weight
	Share      float64 `json:"share"`      // its weight over the competing weights: its fair share, 0 to 1
	UsageShare float64 `json:"usageShare"` // its usage over the competing usage, 0 to 1
	// Position is UsageShare over Share: 1 at its fair share, 2 at
	// twice it; 0 while nobody competing has usage.
	Position float64 `json:"position"`
}

// Competing returns the scopes that compete for fair share now (those with
// a job that has not ended), and per project its members that do.
func Competing(jobs map[structs.JobID]*structs.Job) (map[structs.Scope]bool, map[structs.ProjectID]map[structs.UserID]bool) {
	scopes := map[structs.Scope]bool{}
	members := map[structs.ProjectID]map[structs.UserID]bool{}
	for _, j := range jobs {
		if j.State.Ended() {
			continue
		}
		scopes[j.ChargeScope()] = true
		if j.Project != "" {
			if members[j.Project] == nil {
				members[j.Project] = map[structs.UserID]bool{}
			}
			members[j.Project][j.Owner] = true
		}
	}
	return scopes, members
}

// Positions computes what ordering reads (Snapshot.FairShare) from the
// usage: scopes compete while they have a job that has not ended, each
// with its weight (weight: nil or 0 is 1); project members likewise
// among their project's jobs, weighted by their user scope's weight.
func Positions(u *Usage, weight func(structs.Scope) float64, jobs map[structs.JobID]*structs.Job, aging time.Duration) *FairShare {
	scopes, members := Competing(jobs)
	fs := &FairShare{Scopes: map[structs.Scope]float64{}, Aging: aging}
	for s, st := range Standings(u.Scopes, weightOf(weight), scopes) {
		if st.Position != 0 {
			fs.Scopes[s] = st.Position
		}
	}
	for p, m := range members {
		userWeight := func(id structs.UserID) float64 { return weightOf(weight)(structs.UserScope(id)) }
		for id, st := range Standings(u.Members[p], userWeight, m) {
			if st.Position == 0 {
				continue
			}
			if fs.Members == nil {
				fs.Members = map[structs.ProjectID]map[structs.UserID]float64{}
			}
			if fs.Members[p] == nil {
				fs.Members[p] = map[structs.UserID]float64{}
			}
			fs.Members[p][id] = st.Position
		}
	}
	return fs
}

func weightOf(w func(structs.Scope) float64) func(structs.Scope) float64 {
	return func(s structs.Scope) float64 {
		if w == nil {
			return 1
		}
		return structs.WeightOrDefault(w(s))
	}
}

// Standings returns the standing of each of competing, among them, by
// their usage and weight (positive). Sums run in key order, so the same
// inputs give the same figures.
func Standings[K ~string](usage map[K]float64, weight func(K) float64, competing map[K]bool) map[K]Standing {
	keys := slices.Sorted(maps.Keys(competing))
	var sw, su float64
	for _, k := range keys {
		sw += weight(k)
		su += max(usage[k], 0)
	}
	out := make(map[K]Standing, len(keys))
	for _, k := range keys {
		st := Standing{Usage: max(usage[k], 0), Weight: weight(k)}
		st.Share = st.Weight / sw
		if su > 0 {
			st.UsageShare = st.Usage / su
			st.Position = st.UsageShare / st.Share
		}
		out[k] = st
	}
	return out
}
