package sched_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// placedNow lists the jobs the last cycle placed.
func placedNow(h *st.Harness) []string {
	var out []string
	for _, p := range h.Last.Placements {
		out = append(out, string(p.Job))
	}
	return out
}

// fairHarness is one node of n A GPUs with quotas for u1 and u2, usage
// counting from now.
func fairHarness(t *testing.T, n int64) *st.Harness {
	h := st.New(t, st.GPUNode("n1", "A", n))
	h.Quota(u1, gpuA(64))
	h.Quota(u2, gpuA(64))
	h.Accrue()
	return h
}

// Two users, one floods: the other's job goes next, though the flood's
// jobs waited longer.
func TestFairShareFloodOtherGoesNext(t *testing.T) {
	h := fairHarness(t, 8)
	for i := range 8 {
		h.MustSubmit(st.NewJob(fmt.Sprintf("a%02d", i), "u1").GPU("A", 1).Obj())
	}
	h.Cycle()
	require.Len(t, placedNow(h), 8, "u1 fills the node")
	h.Advance(time.Hour)
	h.Accrue()
	for i := 8; i < 28; i++ {
		h.MustSubmit(st.NewJob(fmt.Sprintf("a%02d", i), "u1").GPU("A", 1).Timeout(24 * time.Hour).Obj())
	}
	h.Advance(time.Minute)
	h.MustSubmit(st.NewJob("b", "u2").GPU("A", 1).Obj())
	h.Cycle()
	assert.Empty(t, placedNow(h), "the node is full")
	assert.InDelta(t, 2.0, h.Snap.FairShare.Scopes[u1], 1e-9, "u1 has all the usage and half the weight")
	assert.Zero(t, h.Snap.FairShare.Scopes[u2])

	h.Finish("a00", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"b"}, placedNow(h), "u2, below its share, goes before u1's older jobs")
	h.Finish("a01", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"a08"}, placedNow(h), "then u1's, oldest first")
}

// A scope's weight is its share: with equal usage, the heavier goes first.
func TestFairShareWeights(t *testing.T) {
	h := fairHarness(t, 2)
	h.Weights = map[structs.Scope]float64{u2: 3}
	h.MustSubmit(st.NewJob("a", "u1").GPU("A", 1).Obj())
	h.MustSubmit(st.NewJob("b", "u2").GPU("A", 1).Obj())
	h.Cycle()
	h.Advance(time.Hour)
	h.Accrue()
	h.MustSubmit(st.NewJob("a2", "u1").GPU("A", 1).Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("b2", "u2").GPU("A", 1).Obj())
	h.Cycle()
	fs := h.Snap.FairShare
	assert.InDelta(t, 0.5/0.25, fs.Scopes[u1], 1e-9, "half the usage, a quarter of the weight")
	assert.InDelta(t, 0.5/0.75, fs.Scopes[u2], 1e-9)
	h.Finish("a", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"b2"}, placedNow(h))
}

// Nothing starves: a job of a scope at position p goes ahead of every
// job submitted p × Aging or more after it, however many come.
func TestFairShareStarvationBound(t *testing.T) {
	h := fairHarness(t, 1)
	h.MustSubmit(st.NewJob("a0", "u1").GPU("A", 1).Obj())
	h.Cycle()
	h.Advance(10 * time.Hour)
	h.Accrue()
	submitted := h.Now
	h.MustSubmit(st.NewJob("old", "u1").GPU("A", 1).Timeout(48 * time.Hour).Obj())
	h.MustSubmit(st.NewJob("b00", "u2").GPU("A", 1).Timeout(48 * time.Hour).Obj())
	h.Cycle()
	bound := time.Duration(h.Snap.FairShare.Scopes[u1] * float64(structs.DefaultAging))
	require.InDelta(t, 2.0, h.Snap.FairShare.Scopes[u1], 1e-9)

	running, gotFirst := "a0", 0
	for i := 1; ; i++ {
		h.Advance(10 * time.Minute)
		h.Accrue()
		h.MustSubmit(st.NewJob(fmt.Sprintf("b%02d", i), "u2").GPU("A", 1).Timeout(48 * time.Hour).Obj())
		h.Finish(running, structs.JobSucceeded)
		h.Cycle()
		p := placedNow(h)
		require.Len(t, p, 1)
		running = p[0]
		if running == "old" {
			break
		}
		gotFirst++
		require.LessOrEqual(t, h.Now.Sub(submitted), bound, "u1's job waited past its bound")
	}
	assert.Positive(t, gotFirst, "u2's newer jobs went first for a while")
	assert.LessOrEqual(t, h.Now.Sub(submitted), bound+10*time.Minute)
}

// A project's jobs are ordered among its members by their use of the
// project's jobs, in the project's pool as in the public one.
func TestFairShareAmongProjectMembers(t *testing.T) {
	own := st.GPUNode("p1", "A", 2)
	own.Pool = "vision"
	h := st.New(t, own)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1", "u2"}})
	h.Accrue()
	h.MustSubmit(st.NewJob("a", "u1").Project("vision").High().GPU("A", 2).Obj())
	h.Cycle()
	h.Advance(time.Hour)
	h.Accrue()
	h.MustSubmit(st.NewJob("a2", "u1").Project("vision").High().GPU("A", 1).Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("b", "u2").Project("vision").High().GPU("A", 1).Obj())
	h.Cycle()
	assert.InDelta(t, 2.0, h.Snap.FairShare.Members["vision"]["u1"], 1e-9)
	assert.Empty(t, h.Snap.FairShare.Scopes, "the project's own pool is not public use")
	h.Finish("a", structs.JobSucceeded)
	h.Scale("a2", 1)
	h.Cycle()
	assert.ElementsMatch(t, []string{"b", "a2"}, placedNow(h))
	assert.Equal(t, "b", placedNow(h)[0], "u2 first among the project's members")
}

// Usage kept command by command equals the usage recomputed from the
// tasks, whatever order placements, ends and accruals come in (a plan
// made before an accrual and committed after it; an end reported late).
func TestUsageRandomOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &structs.FairShare{HalfLife: structs.Duration(time.Hour)}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		jobs := map[structs.JobID]*structs.Job{
			"u": {ID: "u", Owner: "u1"},
			"p": {ID: "p", Owner: "u2", Project: "vision"},
		}
		pool := func(id structs.PoolID) structs.ProjectID {
			if id == "vision" {
				return "vision"
			}
			return ""
		}
		var u sched.Usage
		u.Accrue(f, t0, nil) // counting starts: every report after it
		var all, live []*structs.Task
		clock := t0.Add(time.Minute)
		for i := range 200 {
			clock = clock.Add(time.Duration(r.IntN(600)) * time.Second)
			skew := time.Duration(r.IntN(120)-60) * time.Second // reports from other clocks
			switch r.IntN(3) {
			case 0:
				j := []structs.JobID{"u", "p"}[r.IntN(2)]
				t := &structs.Task{ID: structs.TaskID(fmt.Sprint(i)), Job: j, State: structs.TaskRunning,
					Pool: []structs.PoolID{"", "vision"}[r.IntN(2)], ScheduledAt: clock.Add(skew),
					Resources: structs.Resources{AccelType: "A", Accels: int64(1 + r.IntN(8))}}
				u.Placed(f, sched.AccountOf(jobs[j], t, pool), t)
				all, live = append(all, t), append(live, t)
			case 1:
				if len(live) == 0 {
					continue
				}
				k := r.IntN(len(live))
				t := live[k]
				t.State, t.EndedAt = structs.TaskSucceeded, later(clock.Add(skew), t.ScheduledAt)
				u.Ended(f, sched.AccountOf(jobs[t.Job], t, pool), t)
				live = append(live[:k], live[k+1:]...)
			default:
				var held []sched.Holding
				for _, t := range live {
					held = append(held, sched.Holding{Account: sched.AccountOf(jobs[t.Job], t, pool), Rate: f.Rate(t.Resources), From: t.ScheduledAt})
				}
				u.Accrue(f, clock, held)
			}
			want := sched.RecomputeUsage(f, u.Since, u.At, all, func(id structs.JobID) *structs.Job { return jobs[id] }, pool)
			require.NoError(t, sched.CheckUsage(u, want), "seed %d step %d", seed, i)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}
