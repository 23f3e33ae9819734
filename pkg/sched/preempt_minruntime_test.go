package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// minRuntimeHarness: two 8-GPU nodes, the public pool's minimum runtime
// 10 minutes; low job "old" on n1 started an hour ago, "young" on n2 a
// minute ago.
func minRuntimeHarness(t *testing.T) *st.Harness {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Pool(&structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(10 * time.Minute)})
	h.Quota(u1, gpuA(16))
	h.MustSubmit(st.NewJob("old", "lu").Low().GPU("A", 8).Node("n1").Obj())
	h.Cycle()
	h.Advance(59 * time.Minute)
	h.MustSubmit(st.NewJob("young", "lu").Low().GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	h.Advance(time.Minute)
	return h
}

// With another choice, a job younger than its pool's minimum runtime is
// not preempted, though it lost the least work.
func TestMinRuntimeProtectsAYoungJob(t *testing.T) {
	h := minRuntimeHarness(t)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Obj())
	h.Cycle()
	assert.Equal(t, []string{"old"}, h.Victims())

	// Without a minimum runtime the most recent goes.
	h = minRuntimeHarness(t)
	h.Snap.Pools = nil
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Obj())
	h.Cycle()
	assert.Equal(t, []string{"young"}, h.Victims())
}

// With no other choice the preemptor waits, saying until when, and
// preempts the young job once its minimum runtime has passed.
func TestMinRuntimeMakesThePreemptorWait(t *testing.T) {
	h := minRuntimeHarness(t)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	assert.Empty(t, h.Victims())
	assert.Equal(t, "does not fit now; 0/2 nodes fit: 1 not node n2, 1 without enough free resources now; "+
		"preempting would stop job young before its pool's minimum runtime of 10m; earliest at 2026-01-01T01:09:00Z (in 9m0s)", h.Why("n").Message)
	h.Advance(9*time.Minute - time.Second)
	h.Cycle()
	assert.Empty(t, h.Victims())
	assert.Contains(t, h.Why("n").Message, "earliest at 2026-01-01T01:09:00Z (in 1s)")
	h.Advance(time.Second)
	h.Cycle()
	assert.Equal(t, []string{"young"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"n2"}, h.NodesOf("n"))
}

// A service's replicas are protected one by one: the young ones (added
// by a scale-up) stay while older replicas can go instead; a project
// pool's minimum runtime protects what runs there.
func TestMinRuntimeReplicasAndPools(t *testing.T) {
	h := st.New(t, st.GPUNode("n1", "A", 4), st.GPUNode("n2", "A", 4))
	h.Pool(&structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(10 * time.Minute)})
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("svc", "lu").Low().Service(4, 1).GPU("A", 1).Obj())
	h.Cycle()
	h.Advance(time.Hour)
	require.NoError(t, h.Scale("svc", 8))
	h.Cycle()
	h.Advance(time.Minute)
	before := h.Tasks("svc")
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 2).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 1)
	assert.ElementsMatch(t, []structs.TaskID{before[3].ID, before[2].ID}, p.Preemptions[0].Tasks, "two old replicas on n1, not the young on n2")

	// In a project pool lending its nodes, its own minimum runtime (none
	// here) is what counts, not the public pool's.
	h = st.New(t, &structs.Node{Name: "p1", Pool: "vision", State: structs.NodeReady, Tags: map[string]string{},
		Capacity: structs.Resources{MilliCPU: 96000, Memory: 768 * st.Gi, AccelType: "A", Accels: 8}}, st.G8("n1", "A"))
	h.Pool(&structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(time.Hour)})
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}, LendIdle: true})
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("lp", "lu").Low().GPU("A", 8).Node("p1").Obj())
	h.MustSubmit(st.NewJob("ln", "lu").Low().GPU("A", 8).Node("n1").Obj())
	h.Cycle()
	h.Advance(time.Minute)
	h.MustSubmit(st.NewJob("n", "u1").Project("vision").GPU("A", 8).Obj())
	h.Cycle()
	assert.Equal(t, []string{"lp"}, h.Victims(), "the borrower of the project pool: its pool sets no minimum")
}
