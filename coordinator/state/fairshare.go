package state

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Fair-share usage (sched.Usage says what it counts and how it stays
// exact). The leader accrues it every half-minute (UsageAccrue, with its
// clock's time); a task counts from its placement to its end through the
// hooks in addTask and putTask. The cluster config's fairShare section
// sets how (FairShareSet). Both commands carry MsgIgnorable: no other
// command reads usage, only the leader's ordering does, and a server of
// an older version that skips them orders by age alone.
const (
	MsgUsageAccrue  MsgType = MsgIgnorable | 23
	MsgFairShareSet MsgType = MsgIgnorable | 24
)

func init() {
	register(MsgUsageAccrue, func() Command { return &UsageAccrue{} })
	register(MsgFairShareSet, func() Command { return &FairShareSet{} })
}

// UsageAccrue moves fair-share usage to Now: every figure decays, and
// every task holding resources adds what it held since the last accrual.
// The first one starts counting. A Now not after the last accrual's
// changes nothing.
type UsageAccrue struct {
	Now time.Time `json:"now"`
}

func (*UsageAccrue) Type() MsgType { return MsgUsageAccrue }

func (c *UsageAccrue) apply(s *State) (any, error) {
	var tasks []*structs.Task
	for _, t := range s.Tasks {
		if t.State.HoldsResources() && s.Jobs[t.Job] != nil {
			tasks = append(tasks, t)
		}
	}
	// Sums run in one order on every server: the same bits everywhere.
	slices.SortFunc(tasks, func(a, b *structs.Task) int { return strings.Compare(string(a.ID), string(b.ID)) })
	held := make([]sched.Holding, len(tasks))
	for i, t := range tasks {
		held[i] = sched.Holding{Account: sched.AccountOf(s.Jobs[t.Job], t, s.poolProject), Rate: s.FairShare.Rate(t.Resources), From: t.ScheduledAt}
	}
	s.FairUsage.Accrue(s.FairShare, c.Now, held)
	return nil, nil
}

// FairShareSet sets how fair-share usage is counted (the cluster
// config's fairShare section). Usage counted so far stays; a new
// half-life decays it from the next accrual on.
type FairShareSet struct {
	FairShare *structs.FairShare `json:"fairShare"`
}

func (*FairShareSet) Type() MsgType { return MsgFairShareSet }

func (c *FairShareSet) apply(s *State) (any, error) {
	f := c.FairShare
	if f == nil {
		return nil, invalidf("fairShare: give halfLife, aging or weights")
	}
	if h := f.HalfLife.D(); h != 0 && (h < structs.MinHalfLife || h > structs.MaxHalfLife) {
		return nil, invalidf("fairShare.halfLife %s is not allowed: use %s to %s", f.HalfLife, structs.Duration(structs.MinHalfLife), structs.Duration(structs.MaxHalfLife))
	}
	for k, w := range f.Weights {
		if err := structs.ValidResourceKey(k); err != nil {
			return nil, invalidf("fairShare.weights: %w", err)
		}
		if !(w >= 0 && w <= structs.MaxWeight) {
			return nil, invalidf("fairShare.weights[%s] %g is not allowed: use 0 to %g", k, w, structs.MaxWeight)
		}
	}
	ff := *f
	ff.Weights = maps.Clone(f.Weights)
	s.FairShare = &ff
	return nil, nil
}

// poolProject returns the project whose pool id is ("" for the public
// pool or one that does not exist).
func (s *State) poolProject(id structs.PoolID) structs.ProjectID {
	if p := s.Pools[id]; p != nil {
		return p.Project
	}
	return ""
}

// usagePlaced counts a task that starts holding resources.
func (s *State) usagePlaced(t *structs.Task) {
	if j := s.Jobs[t.Job]; j != nil && t.State.HoldsResources() {
		s.FairUsage.Placed(s.FairShare, sched.AccountOf(j, t, s.poolProject), t)
	}
}

// usageEnded counts a task that stopped holding resources (was, now).
func (s *State) usageEnded(was, now *structs.Task) {
	if j := s.Jobs[now.Job]; j != nil && was.State.HoldsResources() && !now.State.HoldsResources() {
		s.FairUsage.Ended(s.FairShare, sched.AccountOf(j, now, s.poolProject), now)
	}
}

// Weight returns scope's fair-share weight (1 unless its quota sets one).
func (s *State) Weight(scope structs.Scope) float64 {
	return structs.WeightOrDefault(s.Weights[scope])
}

// FairShareOrder is what the scheduler's ordering reads (the snapshot's
// FairShare).
func (s *State) FairShareOrder(jobs map[structs.JobID]*structs.Job) *sched.FairShare {
	return sched.Positions(&s.FairUsage, s.Weight, jobs, s.FairShare.AgingOrDefault())
}

// Standings returns the fair-share standing of each of scopes among the
// scopes that compete now, a scope that does not being counted among
// them as if it did; usage as of now.
func (s *State) Standings(now time.Time, scopes ...structs.Scope) map[structs.Scope]sched.Standing {
	live, _ := sched.Competing(s.Jobs)
	base := sched.Standings(s.FairUsage.Scopes, s.Weight, live)
	out := make(map[structs.Scope]sched.Standing, len(scopes))
	for _, sc := range scopes {
		st, ok := base[sc]
		if !ok {
			with := maps.Clone(live)
			with[sc] = true
			st = sched.Standings(s.FairUsage.Scopes, s.Weight, with)[sc]
		}
		st.Usage = s.FairUsage.AsOf(s.FairShare, st.Usage, now)
		out[sc] = st
	}
	return out
}

// QueuePlace returns job id's place in the scheduler's order at now
// among the jobs of its priority waiting to start in the same pool,
// and its scope's standing; nil when it is not waiting for replicas.
func (s *State) QueuePlace(id structs.JobID, now time.Time) *sched.QueuePlace {
	j := s.Jobs[id]
	if j == nil {
		return nil
	}
	live := s.liveCount()
	waits := func(j *structs.Job) bool {
		return j.State == structs.JobPending ||
			(j.Kind == structs.KindService && !j.State.Ended() && live[j.ID] < j.ShapeAt(j.Shape).Replicas)
	}
	if !waits(j) {
		return nil
	}
	pools := map[structs.ProjectID]structs.PoolID{}
	for _, p := range s.Pools {
		pools[p.Project] = p.Name
	}
	home := homePool(j, pools)
	var same []*structs.Job
	for _, o := range s.Jobs {
		if o.Priority == j.Priority && waits(o) && homePool(o, pools) == home {
			same = append(same, o)
		}
	}
	sched.Order(same, s.FairShareOrder(s.Jobs), now)
	q := &sched.QueuePlace{Place: slices.Index(same, j) + 1, Of: len(same), Priority: j.Priority, Pool: home, Scope: j.ChargeScope()}
	q.Standing = s.Standings(now, q.Scope)[q.Scope]
	if j.Project != "" {
		_, members := sched.Competing(s.Jobs)
		m := sched.Standings(s.FairUsage.Members[j.Project], func(u structs.UserID) float64 { return s.Weight(structs.UserScope(u)) }, members[j.Project])[j.Owner]
		m.Usage = s.FairUsage.AsOf(s.FairShare, m.Usage, now)
		q.Member, q.MemberStanding = j.Owner, &m
	}
	return q
}

// homePool is the pool job j starts in: its project's pool (pools: by
// project), if it has one and j is not low priority; else the public
// pool.
func homePool(j *structs.Job, pools map[structs.ProjectID]structs.PoolID) structs.PoolID {
	if p, ok := pools[j.Project]; ok && j.Project != "" && j.Priority != structs.PriorityLow {
		return p
	}
	return structs.PublicPool
}
