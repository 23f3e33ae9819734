package state_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// kubeLogged is a logged state with kubernetes cluster k (its spark
// drivers run executor Pods) holding nodes, and quota for u1.
func kubeLogged(t *testing.T, nodes ...*structs.Node) *logged {
	l := newLogged(t)
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "k", Backend: "kubernetes"}})
	for _, n := range nodes {
		n.Cluster = "k"
		l.must(&state.NodeUpsert{Node: n})
	}
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{structs.KeyCPU: 200000, structs.KeyMemory: 1000 * st.Gi}}})
	return l
}

// twoExecutors is a spark job with a 2-core driver and 2 executors of
// 4 cores, 8 GiB + 1 GiB: both placed with its driver.
func twoExecutors(id string, b *st.JobBuilder) *structs.Job {
	j := sparkJob(id, b)
	j.Spark.Executor.Instances = 2
	return j
}

var heldRoom = structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}

// The room held for a spark job's minimum executors is replicated state:
// made with the driver's placement (Made: that entry), kept through
// snapshots and replays, counted as used against plans and executors
// decided on snapshots that did not see it, taken one by one by the job's
// executors as they bind (even against a plan made before), and gone
// with the job.
func TestSparkHeldRoomReplicated(t *testing.T) {
	l := kubeLogged(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
	l.must(&state.JobSubmit{Job: twoExecutors("s-1", st.NewJob("s", "u1").Node("n1")), Now: t0})
	before := l.s.Snapshot()
	cr := l.cycle(t0)
	assert.Equal(t, []structs.JobID{"s-1"}, cr.Placed)
	made := uint64(len(l.log))
	want := []sched.Reservation{
		{Job: "s-1", Node: "n1", Resources: heldRoom, Kind: sched.ReserveMinExecutors, Made: made},
		{Job: "s-1", Node: "n1", Resources: heldRoom, Kind: sched.ReserveMinExecutors, Made: made},
	}
	assert.Equal(t, want, l.s.Reservations)
	assert.Equal(t, want, restored(t, l.s).Reservations, "through a snapshot")
	assert.Equal(t, structs.ResourceList{structs.KeyCPU: 2000 + 2*4000, structs.KeyMemory: 4*st.Gi + 2*9*st.Gi}, l.s.Usage["user:u1"],
		"the charge is unchanged: the driver and its most executors")

	// A plan made before (y-1, 8 cores on n1: 16 were free) is refused:
	// n1 has 6 left beside the driver and the room.
	l.must(&state.JobSubmit{Job: job("y-1", st.NewJob("y", "u1").CPU(8, 8).Node("n1")), Now: t0})
	y := l.s.Jobs["y-1"]
	stale := sched.Schedule(before, sched.Input{Pending: []*structs.Job{y}, Now: t0})
	require.Len(t, stale.Placements, 1)
	stale.Pending = nil
	cr = l.must(&state.PlanCommit{Plan: stale, Now: t0}).(state.CommitResult)
	assert.Empty(t, cr.Placed)
	assert.Equal(t, []state.Rejection{{Job: "y-1", Reason: "node n1 has no room left for replica 0"}}, cr.Rejected)
	assert.Equal(t, want, l.s.Reservations, "kept: the stale plan did not see it, and its job runs")

	// So is an executor of another spark job placed on that snapshot.
	l.must(&state.JobSubmit{Job: twoExecutors("t-1", st.NewJob("t", "u1").Node("n2")), Now: t0})
	l.cycle(t0)
	tj, td := l.s.Jobs["t-1"], l.driverOf("t-1")
	require.NotNil(t, td)
	_, err := l.do(&state.ExecutorAdd{Job: tj.ID, Driver: td.ID, Pod: "t-exec-9", Node: "n1", Pool: structs.PublicPool,
		Resources: heldRoom, Token: "tok", Now: t0})
	// t-1's own room is on n2; n1 has 6 cores free, 8 of them s-1's.
	require.NoError(t, err, "6 free cores on n1 hold a 4-core executor")
	_, err = l.do(&state.ExecutorAdd{Job: tj.ID, Driver: td.ID, Pod: "t-exec-10", Node: "n1", Pool: structs.PublicPool,
		Resources: heldRoom, Token: "tok", Now: t0})
	require.ErrorIs(t, err, state.ErrNoRoom, "the rest of n1 is s-1's executors'")
	assert.ErrorContains(t, err, "node n1 has no room left for cpu=4 memory=9Gi")

	// s-1's executors take its room, one each; a plan made while both
	// were held keeps only what is left.
	both := l.s.Snapshot()
	id, err := l.executor("s-1", "s-exec-1", t0)
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("n1"), l.s.Tasks[id].Node)
	assert.Equal(t, want[:1], held(l.s, "s-1"))
	p := sched.Schedule(both, sched.Input{Pending: l.s.Pending(), Now: t0})
	p.Pending = nil
	l.must(&state.PlanCommit{Plan: p, Now: t0})
	assert.Equal(t, want[:1], held(l.s, "s-1"), "taken since the plan's snapshot: it stays gone")
	_, err = l.executor("s-1", "s-exec-2", t0)
	require.NoError(t, err)
	assert.Empty(t, held(l.s, "s-1"), "its minimum executors bound: nothing held")

	// Replaying the log gives the same state.
	again := state.New()
	for i, b := range l.log {
		c, err := state.Decode(b)
		require.NoError(t, err)
		_, _ = again.Apply(uint64(i+1), c)
	}
	wantJSON, err := json.Marshal(l.s)
	require.NoError(t, err)
	got, err := json.Marshal(again)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(got))
}

// held is the room s holds for job id's executors.
func held(s *state.State, id structs.JobID) []sched.Reservation {
	return sched.HeldRoom(s.Reservations, id)
}

// The room goes when its job stops running: cancelled, preempted (with
// the job, before its tasks have stopped), requeued after its driver was
// lost before it started; and with its node, or when the node shrinks.
func TestSparkHeldRoomReleased(t *testing.T) {
	start := func(b *st.JobBuilder) *logged {
		l := kubeLogged(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
		l.must(&state.JobSubmit{Job: twoExecutors("s-1", b.Node("n1")), Now: t0})
		require.Equal(t, []structs.JobID{"s-1"}, l.cycle(t0).Placed)
		require.Len(t, held(l.s, "s-1"), 2)
		return l
	}
	l := start(st.NewJob("s", "u1"))
	l.must(&state.JobCancel{ID: "s-1", Now: t0})
	assert.Empty(t, l.s.Reservations, "cancelled")

	l = start(st.NewJob("s", "u2").Low())
	l.report(t0, structs.TaskRunning, 0, "s-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").CPU(16, 8).Node("n1")), Now: t0})
	l.cycle(t0)
	assert.Equal(t, structs.TaskStopping, l.driverOf("s-1").State, "preempted")
	assert.Equal(t, []sched.Reservation{{Job: "n-1", Node: "n1", Resources: structs.Resources{MilliCPU: 16000, Memory: 8 * st.Gi}, Kind: sched.ReservePreemption}},
		l.s.Reservations, "s-1's room went with it; n-1 waits for its driver to stop")
	l.report(t0, structs.TaskFailed, 143, "s-1")
	assert.Equal(t, structs.JobPending, l.s.Jobs["s-1"].State)
	assert.Equal(t, []structs.JobID{"n-1"}, l.cycle(t0).Placed)
	assert.Empty(t, l.cycle(t0).Placed, "s-1 waits whole: no room for it and its executors beside n-1")
	for _, x := range l.s.TasksOf("s-1") {
		assert.Equal(t, 0, x.Attempt, "task %s", x.ID)
	}

	l = start(st.NewJob("s", "u1"))
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: l.driverOf("s-1").ID, State: structs.TaskLost, Time: t0}}})
	assert.Equal(t, structs.JobPending, l.s.Jobs["s-1"].State, "requeued: lost before it started")
	assert.Empty(t, l.s.Reservations)
	assert.Equal(t, []structs.JobID{"s-1"}, l.cycle(t0).Placed, "placed again, with its room")
	assert.Len(t, held(l.s, "s-1"), 2)

	l = start(st.NewJob("s", "u1"))
	l.report(t0, structs.TaskRunning, 0, "s-1")
	n1 := *l.s.Nodes["n1"]
	n1.Capacity.MilliCPU = 7000 // the driver and one executor's room
	l.must(&state.NodeUpsert{Node: &n1})
	assert.Len(t, held(l.s, "s-1"), 1, "n1 shrank: the room it cannot hold goes")
	n1.State = structs.NodeDraining
	l.must(&state.NodeUpsert{Node: &n1})
	assert.Empty(t, l.s.Reservations, "n1 drains: nothing lands there")
}
