package sched_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

var (
	u1 = structs.UserScope("u1")
	u2 = structs.UserScope("u2")
)

func gpuA(n int64) structs.ResourceList { return structs.ResourceList{"gpu/A": n} }

// Two gangs that each need every node; one runs whole, the other
// holds nothing, and gets all nodes within one cycle of the first ending.
func TestC01TwoGangsNeverSplit(t *testing.T) {
	for run := range 50 {
		h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"), st.G8("n4", "A"))
		h.Quota(u1, gpuA(64))
		h.Quota(u2, gpuA(64))
		j1 := st.NewJob("j1", "u1").MPI(4).GPU("A", 8).Spread().Obj()
		j2 := st.NewJob("j2", "u2").MPI(4).GPU("A", 8).Spread().Obj()
		first, second := j1, j2
		if run%2 == 1 { // either may come first: both orders
			first, second = j2, j1
		}
		h.MustSubmit(first)
		h.Advance(time.Duration(run) * time.Millisecond)
		h.MustSubmit(second)
		h.Cycle()
		assert.Len(t, h.Tasks(string(first.ID)), 4)
		assert.Empty(t, h.Tasks(string(second.ID)))
		assert.Equal(t, structs.JobPending, h.Job(string(second.ID)).State)
		assert.Equal(t, int64(32), h.Usage(u1, "gpu/A"))
		assert.Equal(t, int64(32), h.Usage(u2, "gpu/A"))
		h.Finish(string(first.ID), structs.JobSucceeded)
		h.Cycle()
		assert.ElementsMatch(t, []string{"n1", "n2", "n3", "n4"}, h.NodesOf(string(second.ID)))
	}
}

// A gang limited by a selector holds nothing while it cannot fit;
// a smaller job takes the nodes; tagging a third node starts the gang whole.
func TestC02GangHoldsNothingUntilItFits(t *testing.T) {
	n1, n2 := st.G8("n1", "A"), st.G8("n2", "A")
	n1.Tags["fabric"], n2.Tags["fabric"] = "ib", "ib"
	h := st.New(t, n1, n2, st.G8("n3", "A"), st.G8("n4", "A"))
	h.Quota(u1, gpuA(64))
	h.MustSubmit(st.NewJob("j", "u1").MPI(5).GPU("A", 4).Selector("fabric=ib").Obj())
	h.MustSubmit(st.NewJob("k", "u1").GPU("A", 8).Selector("fabric=ib").Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("j"))
	require.Len(t, h.Tasks("k"), 1)
	assert.Contains(t, []string{"n1", "n2"}, h.NodesOf("k")[0])
	why := h.Why("j")
	require.NotNil(t, why)
	assert.Equal(t, &sched.GangShortfall{Needed: 5, Fit: 2, MaxFit: 4, Together: true}, why.Gang)
	assert.Contains(t, why.Message, "gang needs 5 replicas: 2 fit now, at most 4 on empty nodes")
	assert.Contains(t, why.Message, "2 not matching selector fabric=ib")
	h.Finish("k", structs.JobSucceeded)
	h.Node("n3").Tags["fabric"] = "ib"
	h.Cycle()
	assert.Len(t, h.Tasks("j"), 5)
	assert.Equal(t, 20, h.UsedAccels("n1")+h.UsedAccels("n2")+h.UsedAccels("n3"))
	assert.Equal(t, 0, h.UsedAccels("n4"))
}

// Rejected submissions charge nothing.
func TestC07RejectionsChargeNothing(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("train-a", "u1").GPU("A", 4).Obj())
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))
	err := h.Submit(st.NewJob("train-a", "u1").GPU("A", 4).Obj())
	require.ErrorContains(t, err, "already exists")
	err = h.Submit(st.NewJob("z", "u1").GPU("Z", 4).Obj())
	require.EqualError(t, err, `unknown accelerator type "Z": this cluster has A`)
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))
	h.MustSubmit(st.NewJob("train-b", "u1").GPU("A", 4).Obj())
	assert.Equal(t, int64(8), h.Usage(u1, "gpu/A"))
}

// Quota asks whether the new job would fit, not whether the scope is
// already over.
func TestC09QuotaWouldFit(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("j1", "u1").GPU("A", 7).Obj())
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("j1"))
	err := h.Submit(st.NewJob("j2", "u1").GPU("A", 8).Obj())
	var qe *sched.QuotaError
	require.ErrorAs(t, err, &qe)
	assert.True(t, errors.Is(err, sched.ErrQuotaExceeded))
	assert.EqualError(t, err, "quota exceeded for user:u1: gpu/A quota 8, in use 7, requested 8")
	assert.Equal(t, int64(7), h.Usage(u1, "gpu/A"))
	h.MustSubmit(st.NewJob("l", "u1").Low().GPU("A", 8).Obj())
	h.MustSubmit(st.NewJob("j3", "u1").GPU("A", 1).Obj())
	h.Cycle()
	assert.Equal(t, []string{"n2"}, h.NodesOf("l"))
	assert.Equal(t, []string{"n1"}, h.NodesOf("j3"))
	assert.Equal(t, int64(8), h.Usage(u1, "gpu/A"))
}

// Requests no node can ever satisfy are refused at submit, charge
// nothing and do not delay others.
func TestC11NeverFitsRefusedAtSubmit(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(u1, gpuA(32))
	err := h.Submit(st.NewJob("a", "u1").GPU("A", 9).Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.EqualError(t, err, "can never fit; 0/2 nodes fit: 2 too small for one replica (gpu/A=9); at most 8 accelerators on one node, 9 asked per replica")
	var ue *sched.UnsatisfiableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []sched.Count{{Reason: "too small for one replica (gpu/A=9)", Nodes: 2}}, ue.Why.Filtered, "notes are not counts")
	assert.Equal(t, []string{"at most 8 accelerators on one node, 9 asked per replica"}, ue.Why.Notes)
	err = h.Submit(st.NewJob("b", "u1").MPI(3).GPU("A", 8).Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.Contains(t, err.Error(), "gang needs 3 replicas: 2 fit now, at most 2 on empty nodes")
	assert.Equal(t, int64(0), h.Usage(u1, "gpu/A"))
	h.MustSubmit(st.NewJob("c", "u1").GPU("A", 4).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("c"), 1)
}

// Evict only what is needed: the most recently started low job for
// one replica, the node needing fewest victims for the next.
func TestC13PreemptFewestMostRecent(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(u1, gpuA(16))
	// L1 and L3 started 2 h ago, L2 and L4 10 min ago.
	h.MustSubmit(st.NewJob("l1", "lu").Low().GPU("A", 4).Node("n1").Obj())
	h.MustSubmit(st.NewJob("l3", "lu").Low().GPU("A", 4).Node("n2").Obj())
	h.Cycle()
	h.Advance(110 * time.Minute)
	h.MustSubmit(st.NewJob("l2", "lu").Low().GPU("A", 4).Node("n1").Obj())
	h.MustSubmit(st.NewJob("l4", "lu").Low().GPU("A", 4).Node("n2").Obj())
	h.Cycle()
	h.Advance(10 * time.Minute)

	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 4).Obj())
	h.Cycle()
	require.Len(t, h.Victims(), 1)
	first := h.Victims()[0]
	assert.Contains(t, []string{"l2", "l4"}, first)
	assert.Equal(t, "waiting for 1 preempted low-priority job(s) to stop: "+first, h.Why("n").Waiting)
	h.Cycle() // victims still stopping: no new victims, nobody takes the room
	assert.Empty(t, h.Victims())
	h.Settle()
	h.Cycle()
	require.Len(t, h.Tasks("n"), 1)
	nNode := h.NodesOf("n")[0]

	h.MustSubmit(st.NewJob("m", "u1").GPU("A", 8).Obj())
	h.Cycle()
	other := map[string][]string{"n1": {"l3", "l4"}, "n2": {"l1", "l2"}}[nNode]
	var want []string
	for _, v := range other {
		if v != first {
			want = append(want, v)
		}
	}
	assert.Equal(t, want, h.Victims())
	assert.Len(t, want, 2)
}

// No eviction unless it makes the preemptor fit.
func TestC16NoUselessEviction(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(u1, gpuA(16))
	h.Quota(u2, gpuA(8))
	h.MustSubmit(st.NewJob("l", "lu").Low().GPU("A", 8).Node("n1").Obj())
	h.MustSubmit(st.NewJob("nn", "u2").GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("j", "u1").MPI(2).GPU("A", 8).Obj())
	h.Cycle()
	assert.Empty(t, h.Victims())
	assert.Empty(t, h.Tasks("j"))

	// Variant: a selector no node matches: pending with that reason, no evictions.
	hk := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	hk.Quota(u1, gpuA(16))
	hk.Quota(u2, gpuA(8))
	hk.MustSubmit(st.NewJob("l", "lu").Low().GPU("A", 8).Node("n1").Obj())
	hk.MustSubmit(st.NewJob("nn", "u2").GPU("A", 8).Node("n2").Obj())
	hk.Cycle()
	hk.MustSubmit(st.NewJob("k", "u1").GPU("A", 8).Selector("fabric=ib").Obj())
	hk.Cycle()
	assert.Empty(t, hk.Victims())
	assert.Equal(t, "can never fit; 0/2 nodes fit: 2 not matching selector fabric=ib", hk.Why("k").Message)

	// When n completes, j evicts l and starts both workers in one step.
	h.Finish("nn", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"l"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.ElementsMatch(t, []string{"n1", "n2"}, h.NodesOf("j"))
	assert.Equal(t, structs.JobPending, h.Job("l").State)
	assert.Equal(t, 1, h.Job("l").Attempt)
}

// Reasons with correct node counts; they follow cluster changes; a
// job that times out keeps its reason.
func TestC26WhyPending(t *testing.T) {
	newH := func() *st.Harness {
		n1, n2 := st.G8("n1", "A"), st.G8("n2", "A")
		n1.Tags["gpu"], n2.Tags["gpu"] = "A", "A"
		n2.Tags["maint"] = "true"
		n2.Taints = append(n2.Taints, st.Taint("maint", "true"))
		h := st.New(t, n1, n2)
		h.Quota(u1, structs.ResourceList{"gpu/A": 16, "gpu/B": 8})
		return h
	}
	for _, tagged := range []bool{true, false} {
		h := newH()
		err := h.Submit(st.NewJob("j1", "u1").GPU("B", 1).Obj())
		require.EqualError(t, err, `unknown accelerator type "B": this cluster has A`)
		err = h.Submit(st.NewJob("j2", "u1").GPU("A", 1).Node("n9").Obj())
		require.EqualError(t, err, "node n9 does not exist: can never fit")
		h.MustSubmit(st.NewJob("j3", "u1").GPU("A", 1).Selector("maint=true").Obj())
		h.MustSubmit(st.NewJob("j4", "u1").GPU("A", 1).Selector("rack=r7").Timeout(5 * time.Minute).Obj())
		h.Cycle()
		assert.Equal(t, "can never fit; 0/2 nodes fit: 1 not matching selector maint=true, 1 with untolerated taint maint=true:NoSchedule", h.Why("j3").Message)
		assert.Equal(t, "can never fit; 0/2 nodes fit: 1 not matching selector rack=r7, 1 with untolerated taint maint=true:NoSchedule", h.Why("j4").Message)
		assert.Equal(t, []sched.Count{{Reason: "not matching selector rack=r7", Nodes: 1}, {Reason: "with untolerated taint maint=true:NoSchedule", Nodes: 1}}, h.Why("j4").Filtered)
		h.Advance(2 * time.Minute)
		if tagged {
			h.Node("n1").Tags["rack"] = "r7"
			h.Cycle()
			assert.Equal(t, []string{"n1"}, h.NodesOf("j4"))
			assert.Equal(t, structs.JobRunning, h.Job("j4").State)
			continue
		}
		h.Cycle()
		h.Advance(3 * time.Minute)
		p := h.Cycle()
		require.Len(t, p.Timeouts, 1)
		assert.Equal(t, sched.Timeout{Job: "j4", Reason: structs.ReasonPendingTimeout, Why: p.Timeouts[0].Why}, p.Timeouts[0])
		assert.Contains(t, p.Timeouts[0].Why.Message, "1 not matching selector rack=r7")
		assert.Equal(t, structs.JobFailed, h.Job("j4").State)
		assert.Equal(t, int64(1), h.Usage(u1, "gpu/A"), "j4 released its quota; j3 (default 30 min timeout) still holds 1")
	}
}
