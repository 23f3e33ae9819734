package state_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

const week = structs.DefaultHalfLife

// heldFor is what rate held for d counts, seen at the end of d: the
// integral of rate × 2^(-age/halfLife) over d.
func heldFor(rate float64, d time.Duration) float64 {
	return rate * week.Seconds() / math.Ln2 * (1 - math.Exp2(-float64(d)/float64(week)))
}

// Usage counts a replica's GPUs for as long as it holds them, whatever the
// order in which its placement, the accruals and its end arrive; every
// command is checked against the usage recomputed from the tasks (logged).
func TestUsageFollowsTasks(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.C64("c1"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8, "cpu": 64000, "memory": 256 * st.Gi}}})
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u2", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.UsageAccrue{Now: t0})
	assert.Equal(t, t0, l.s.FairUsage.Since, "the first accrual starts counting")
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").GPU("A", 4)), Now: t0})
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").CPU(8, 32)), Now: t0})
	l.cycle(t0)
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	// 4 GPUs, and 8 cores + 32 GiB = 1 + 0.25 GPUs by the default weights.
	assert.InDelta(t, heldFor(4+1.25, time.Hour), l.s.FairUsage.Scopes["user:u1"], 1e-6)

	// b ends before the next accrual, a after it.
	l.report(t0.Add(90*time.Minute), structs.TaskSucceeded, 0, "b-1")
	l.must(&state.UsageAccrue{Now: t0.Add(2 * time.Hour)})
	want := heldFor(4, 2*time.Hour) + heldFor(1.25, 90*time.Minute)*math.Exp2(-float64(30*time.Minute)/float64(week))
	assert.InDelta(t, want, l.s.FairUsage.Scopes["user:u1"], 1e-6)

	// A plan made before the last accrual commits after it: the task
	// counts from its placement all the same; an end reported late too.
	l.must(&state.JobSubmit{Job: job("c-1", st.NewJob("c", "u2").GPU("A", 2)), Now: t0.Add(100 * time.Minute)})
	p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: t0.Add(110 * time.Minute)})
	p.Pending = nil
	require.Equal(t, state.CommitResult{Placed: []structs.JobID{"c-1"}}, l.must(&state.PlanCommit{Plan: p, Now: t0.Add(110 * time.Minute)}))
	l.must(&state.UsageAccrue{Now: t0.Add(3 * time.Hour)})
	l.report(t0.Add(150*time.Minute), structs.TaskFailed, 1, "c-1")
	assert.InDelta(t, heldFor(2, 40*time.Minute)*math.Exp2(-float64(30*time.Minute)/float64(week)), l.s.FairUsage.Scopes["user:u2"], 1e-6)

	// An accrual from a clock behind the last one changes nothing.
	before := l.s.FairUsage.Clone()
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	assert.Equal(t, before, l.s.FairUsage)
}

// After one half-life usage counts half; a scope whose usage decays below
// one GPU-second and holds nothing is forgotten.
func TestUsageDecays(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.UsageAccrue{Now: t0})
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").GPU("A", 8)), Now: t0})
	l.cycle(t0)
	l.report(t0.Add(time.Hour), structs.TaskSucceeded, 0, "a-1")
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	u := l.s.FairUsage.Scopes["user:u1"]
	require.InDelta(t, heldFor(8, time.Hour), u, 1e-6)

	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour + week)})
	assert.InEpsilon(t, u/2, l.s.FairUsage.Scopes["user:u1"], 1e-12, "one half-life halves it")
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour + 3*week)})
	assert.InEpsilon(t, u/8, l.s.FairUsage.Scopes["user:u1"], 1e-12)

	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour + 20*week)}) // 28800 GPU-s / 2^20 < 1
	assert.NotContains(t, l.s.FairUsage.Scopes, structs.Scope("user:u1"))
}

// A project's job in its own pool counts only to its owner among the
// project's members; in the public pool to the project's scope as well.
func TestUsageOfProjectJobs(t *testing.T) {
	own := st.G8("p1", "A")
	own.Pool = "vision"
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1", "u2"}}})
	l.must(&state.NodeUpsert{Node: own})
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "project:vision", Limits: structs.ResourceList{"gpu/A": 16}}})
	l.must(&state.UsageAccrue{Now: t0})
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").Project("vision").GPU("A", 8)), Now: t0})
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u2").Project("vision").GPU("A", 2)), Now: t0})
	cr := l.cycle(t0)
	require.Len(t, cr.Placed, 2, "%+v", cr)
	require.Equal(t, structs.PoolID("vision"), l.s.TasksOf("a-1")[0].Pool)
	require.Equal(t, structs.PublicPool, l.s.TasksOf("b-1")[0].Pool)
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	u := l.s.FairUsage
	assert.InDelta(t, heldFor(2, time.Hour), u.Scopes["project:vision"], 1e-6, "only what it runs in the public pool")
	assert.InDelta(t, heldFor(8, time.Hour), u.Members["vision"]["u1"], 1e-6)
	assert.InDelta(t, heldFor(2, time.Hour), u.Members["vision"]["u2"], 1e-6)
}

// Weights come with quotas; bad weights and settings change nothing.
func TestFairShareSettings(t *testing.T) {
	l := newLogged(t)
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Weight: 2}})
	assert.Equal(t, 2.0, l.s.Weight("user:u1"))
	assert.Equal(t, 1.0, l.s.Weight("user:u2"))
	for _, w := range []float64{-1, 2e6} {
		_, err := l.do(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Weight: w, Limits: structs.ResourceList{"cpu": 1}}})
		require.ErrorIs(t, err, state.ErrInvalid)
	}
	assert.Equal(t, 2.0, l.s.Weight("user:u1"))
	assert.Empty(t, l.s.Quotas["user:u1"])
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1"}})
	assert.Equal(t, 1.0, l.s.Weight("user:u1"), "a quota set without a weight has the default")

	_, err := l.do(&state.FairShareSet{FairShare: &structs.FairShare{HalfLife: structs.Duration(time.Second)}})
	require.ErrorIs(t, err, state.ErrInvalid)
	_, err = l.do(&state.FairShareSet{FairShare: &structs.FairShare{Weights: map[structs.ResourceKey]float64{"gpus": 1}}})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Nil(t, l.s.FairShare)
	l.must(&state.FairShareSet{FairShare: &structs.FairShare{HalfLife: structs.Duration(time.Hour), Weights: map[structs.ResourceKey]float64{"gpu/A": 2}}})
	assert.Equal(t, time.Hour, l.s.FairShare.HalfLifeOrDefault())
	assert.Equal(t, 4.0, l.s.FairShare.Rate(structs.Resources{AccelType: "A", Accels: 2}))
}

// Usage is part of the snapshot, and replaying the log gives it bit for bit.
func TestUsageReplaysAndRestores(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.C64("c1"))
	for _, u := range []structs.Scope{"user:u1", "user:u2", "user:u3"} {
		l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: u, Limits: structs.ResourceList{"gpu/A": 8}}})
	}
	l.must(&state.FairShareSet{FairShare: &structs.FairShare{HalfLife: structs.Duration(time.Hour)}})
	l.must(&state.UsageAccrue{Now: t0})
	for i, id := range []string{"a-1", "b-1", "c-1"} {
		l.must(&state.JobSubmit{Job: job(id, st.NewJob(id[:1], []string{"u1", "u2", "u3"}[i]).GPU("A", int64(i+1))), Now: t0})
	}
	l.cycle(t0)
	for m := 1; m <= 5; m++ {
		l.must(&state.UsageAccrue{Now: t0.Add(time.Duration(m) * 7 * time.Minute)})
	}
	l.report(t0.Add(40*time.Minute), structs.TaskSucceeded, 0, "b-1")
	l.must(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	require.Len(t, l.s.FairUsage.Scopes, 3)

	again := state.New()
	for i, b := range l.log {
		c, err := state.Decode(b)
		require.NoError(t, err)
		_, _ = again.Apply(uint64(i+1), c)
	}
	assert.Equal(t, l.s.FairUsage, again.FairUsage, "the same bits on every server")

	b, err := json.Marshal(l.s)
	require.NoError(t, err)
	restored := state.New()
	require.NoError(t, json.Unmarshal(b, restored))
	assert.Equal(t, l.s.FairUsage, restored.FairUsage)
	assert.Equal(t, l.s.FairShare, restored.FairShare)
}
