package sched_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// sparkRun is a harness with spark job s (driver 2 cores on n1, up to 4
// executors of 4 cores, 8 GiB + 1 GiB, none held for it: its minimum is 0)
// running at priority p, and low jobs
// filling n1 (a: 14 cores) and n2 (b: 10 cores, then c: 6 cores a minute
// later). n3 is another cluster's, with low job d (16 cores).
func sparkRun(t *testing.T, p structs.Priority) (*st.Harness, *structs.Task) {
	n3 := st.CPUNode("n3", 16, 64)
	n3.Cluster = "other"
	h := st.New(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64), n3)
	h.Quota("user:u1", structs.ResourceList{structs.KeyCPU: 64000, structs.KeyMemory: 256 * st.Gi})
	s := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Node("n1").Priority(p).Obj()
	s.Spark = &structs.Spark{MainApplicationFile: "local:///a.py", Executor: structs.SparkExecutor{Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi},
		DynamicAllocation: &structs.SparkDynamicAllocation{MaxExecutors: 4}} // no minimum: its executors come one by one
	h.MustSubmit(s)
	h.Cycle()
	h.MustSubmit(st.NewJob("a", "u1").Low().CPU(14, 8).Node("n1").Obj())
	h.MustSubmit(st.NewJob("b", "u1").Low().CPU(10, 8).Node("n2").Obj())
	h.MustSubmit(st.NewJob("d", "u1").Low().CPU(16, 8).Node("n3").Obj())
	h.Cycle()
	h.Advance(sched.ExecutorHold)
	h.MustSubmit(st.NewJob("c", "u1").Low().CPU(6, 8).Node("n2").Obj())
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("s"))
	require.Equal(t, []string{"n2"}, h.NodesOf("c"))
	return h, h.Tasks("s")[0]
}

// addExecutor records executor Pod pod of job s on node as the state does
// (ExecutorAdd): a task past the job's replicas.
func addExecutor(h *st.Harness, pod string, tp sched.TaskPlacement) {
	j := h.Job("s")
	idx := j.Replicas + len(h.Tasks("s")) - 1
	h.Snap.Tasks = append(h.Snap.Tasks, &structs.Task{ID: structs.MakeTaskID(j.ID, idx, j.Attempt), Job: j.ID, Index: idx,
		Attempt: j.Attempt, Node: tp.Node, Pool: tp.Pool, Priority: j.Priority, State: structs.TaskScheduled,
		Resources: tp.Resources, Accels: tp.Accels, Executor: pod, ScheduledAt: h.Now})
	require.NoError(h.T, sched.CheckInvariants(h.Snap))
}

// preemptFor applies what PreemptForExecutor decided as the state does
// (ExecutorPreempt): the victims stop (and the room held for their
// minimum executors goes), the room is reserved.
func preemptFor(h *st.Harness, pre []sched.Preemption, r sched.Reservation) {
	stop := map[structs.TaskID]bool{}
	for _, p := range pre {
		for _, id := range p.Tasks {
			stop[id] = true
		}
		h.Snap.Reservations = slices.DeleteFunc(slices.Clone(h.Snap.Reservations), func(r sched.Reservation) bool {
			return r.Kind == sched.ReserveMinExecutors && r.Job == p.Victim
		})
	}
	for _, t := range h.Snap.Tasks {
		if stop[t.ID] {
			t.State = structs.TaskStopping
		}
	}
	r.Made = h.Snap.Index + 1
	h.Snap.Reservations = append(h.Snap.Reservations, r)
	require.NoError(h.T, sched.CheckInvariants(h.Snap))
}

// A normal job's executor that fits nowhere preempts, as a one-replica job
// would: one victim (c, not a or b: the fewest victims, then the least
// resources), only in its driver's cluster (d is cheaper to evict no
// more, but in another cluster), the room held for it while c stops and
// after, against c requeued and against the job's other executors, then
// taken by it.
func TestExecutorPreempts(t *testing.T) {
	h, driver := sparkRun(t, structs.PriorityNormal)
	j := h.Job("s")
	pod := sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}
	_, err := sched.PlaceExecutor(h.Snap, j, driver, pod)
	require.ErrorIs(t, err, sched.ErrNoRoom)

	pre, r, err := sched.PreemptForExecutor(h.Snap, j, driver, pod, h.Now)
	require.NoError(t, err)
	want := sched.Reservation{Job: "s", Node: "n2", Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi},
		Kind: sched.ReserveExecutor, Executor: "exec-1"}
	assert.Equal(t, []sched.Preemption{{Victim: "c", Preemptor: "s", Tasks: []structs.TaskID{"c-0-a0"}}}, pre)
	assert.Equal(t, want, r)
	preemptFor(h, pre, r)
	want.Made = h.Snap.Index + 1

	// Once is enough: while c stops it waits, preempting nothing more.
	_, _, err = sched.PreemptForExecutor(h.Snap, j, driver, pod, h.Now)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "low-priority jobs on node n2 are being stopped to make room for it: does not fit now")
	p := h.Cycle()
	assert.Empty(t, p.Preemptions)
	assert.Equal(t, []sched.Reservation{want}, p.Reservations, "kept while c stops")

	// c stops and is requeued: the room stays the executor's, not c's,
	// nor another executor's of the same job.
	h.Settle()
	p = h.Cycle()
	assert.Empty(t, p.Placements)
	assert.Empty(t, p.Preemptions)
	want.Freed = h.Now
	assert.Equal(t, []sched.Reservation{want}, p.Reservations)
	assert.Contains(t, h.Why("c").Message, "reserved")
	_, err = sched.PlaceExecutor(h.Snap, j, driver, sched.ExecutorPod{Name: "exec-2", Requests: j.Spark.ExecutorResources()})
	require.ErrorIs(t, err, sched.ErrNoRoom)
	h.Advance(sched.ExecutorHold / 2)
	p = h.Cycle()
	assert.Equal(t, []sched.Reservation{want}, p.Reservations, "held ExecutorHold after its victims have gone")

	tp, err := sched.PlaceExecutor(h.Snap, j, driver, pod)
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "n2", Pool: structs.PublicPool, Resources: want.Resources}, tp)
	addExecutor(h, "exec-1", tp)
	p = h.Cycle()
	assert.Empty(t, p.Reservations, "taken: dropped")
	assert.Empty(t, p.Placements, "c (6 cores) does not fit in the 2 left")
	assert.Equal(t, []string{"n1", "n2"}, h.NodesOf("s"))
	assert.Equal(t, []string{"n1"}, h.NodesOf("a"))
	assert.Equal(t, []string{"n2"}, h.NodesOf("b"))
}

// The room freed for an executor that never comes lapses ExecutorHold
// after its victims have gone (held through that last cycle); then the
// requeued victim takes it back. Tasks stopping on its node keep it.
func TestExecutorReservationLapses(t *testing.T) {
	h, driver := sparkRun(t, structs.PriorityNormal)
	j := h.Job("s")
	pre, r, err := sched.PreemptForExecutor(h.Snap, j, driver, sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}, h.Now)
	require.NoError(t, err)
	preemptFor(h, pre, r)
	h.Settle()
	require.Len(t, h.Cycle().Reservations, 1)
	h.Advance(sched.ExecutorHold - 1)
	require.Len(t, h.Cycle().Reservations, 1)
	h.Advance(1)
	p := h.Cycle()
	assert.Empty(t, p.Reservations, "lapsed")
	assert.Empty(t, p.Placements, "held through its last cycle")
	p = h.Cycle()
	require.Len(t, p.Placements, 1)
	assert.Equal(t, []string{"n2"}, h.NodesOf("c"))

	// While other tasks on its node stop (their rooms count against what
	// is free there), it is held, and ExecutorHold runs again after.
	h, driver = sparkRun(t, structs.PriorityNormal)
	j = h.Job("s")
	pre, r, err = sched.PreemptForExecutor(h.Snap, j, driver, sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}, h.Now)
	require.NoError(t, err)
	preemptFor(h, pre, r)
	h.Settle()
	require.False(t, h.Cycle().Reservations[0].Freed.IsZero())
	h.Tasks("b")[0].State = structs.TaskStopping
	h.Advance(sched.ExecutorHold)
	p = h.Cycle()
	require.Len(t, p.Reservations, 1)
	assert.True(t, p.Reservations[0].Freed.IsZero(), "b stops on its node")
	h.Settle()
	h.Advance(sched.ExecutorHold - 1)
	require.Len(t, h.Cycle().Reservations, 1)
	require.Len(t, h.Cycle().Reservations, 1)

	// A job that stops running drops its executors' reservations.
	h, driver = sparkRun(t, structs.PriorityNormal)
	j = h.Job("s")
	pre, r, err = sched.PreemptForExecutor(h.Snap, j, driver, sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}, h.Now)
	require.NoError(t, err)
	preemptFor(h, pre, r)
	h.Finish("s", structs.JobSucceeded)
	assert.Empty(t, h.Cycle().Reservations)
}

// The Pod's own constraints bound the victims: with n2 left out by its
// node selector, a (14 cores, on n1) goes instead of c.
func TestExecutorPreemptsWherePodAllows(t *testing.T) {
	h, driver := sparkRun(t, structs.PriorityNormal)
	h.Node("n1").Tags["rack"] = "r1"
	j := h.Job("s")
	pre, r, err := sched.PreemptForExecutor(h.Snap, j, driver, sched.ExecutorPod{Name: "exec-1",
		Requests: j.Spark.ExecutorResources(), NodeSelector: map[string]string{"rack": "r1"}}, h.Now)
	require.NoError(t, err)
	assert.Equal(t, []sched.Preemption{{Victim: "a", Preemptor: "s", Tasks: []structs.TaskID{"a-0-a0"}}}, pre)
	assert.Equal(t, structs.NodeID("n1"), r.Node)
	preemptFor(h, pre, r)
	h.Cycle()
}

// A low job's executor preempts nothing; a job of the executor's priority
// is never a victim; nothing goes when even every low job in reach would
// not make room.
func TestExecutorPreemptsNothing(t *testing.T) {
	h, driver := sparkRun(t, structs.PriorityLow)
	j := h.Job("s")
	pod := sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}
	pre, _, err := sched.PreemptForExecutor(h.Snap, j, driver, pod, h.Now)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.Empty(t, pre)
	assert.EqualError(t, err, "no node in its driver's pool public has room for an executor of job s (cpu=4 memory=9Gi): does not fit now")

	// n1: the driver, normal job n (12 cores), low job l (2 cores); n2:
	// normal job m (16 cores). Evicting l frees 2 of the 4 cores asked;
	// n or m would make room but are of the executor's priority.
	h = st.New(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
	h.Quota("user:u1", structs.ResourceList{structs.KeyCPU: 64000, structs.KeyMemory: 256 * st.Gi})
	s := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Node("n1").Obj()
	s.Spark = &structs.Spark{MainApplicationFile: "local:///a.py", Executor: structs.SparkExecutor{Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi},
		DynamicAllocation: &structs.SparkDynamicAllocation{MaxExecutors: 4}} // no minimum: its executors come one by one
	h.MustSubmit(s)
	h.MustSubmit(st.NewJob("n", "u1").CPU(12, 8).Node("n1").Obj())
	h.MustSubmit(st.NewJob("m", "u1").CPU(16, 8).Node("n2").Obj())
	h.MustSubmit(st.NewJob("l", "u1").Low().CPU(2, 8).Node("n1").Obj())
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("l"))
	j = h.Job("s")
	pre, r, err := sched.PreemptForExecutor(h.Snap, j, h.Tasks("s")[0], pod, h.Now)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.EqualError(t, err, "no node in its driver's pool public has room for an executor of job s (cpu=4 memory=9Gi), "+
		"and stopping low-priority jobs would not make room: does not fit now")
	assert.Empty(t, pre)
	assert.Zero(t, r)
	for _, tk := range h.Snap.Tasks {
		assert.Equal(t, structs.TaskRunning, tk.State, "task %s untouched", tk.ID)
	}
}

// A high job's executor, in its project's pool like its driver, evicts the
// low jobs borrowing that pool, and nothing in the public pool.
func TestExecutorOfHighJobPreempts(t *testing.T) {
	v1, v2, pub := st.CPUNode("v1", 16, 64), st.CPUNode("v2", 16, 64), st.CPUNode("p1", 16, 64)
	v1.Pool, v2.Pool = "vision", "vision"
	h := st.New(t, v1, v2, pub)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}, LendIdle: true})
	s := st.NewJob("s", "u1").Kind(structs.KindSpark).CPU(2, 4).Project("vision").High().Node("v1").Obj()
	s.Spark = &structs.Spark{MainApplicationFile: "local:///a.py", Executor: structs.SparkExecutor{Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi},
		DynamicAllocation: &structs.SparkDynamicAllocation{MaxExecutors: 2}} // no minimum: its executors come one by one
	h.MustSubmit(s)
	h.Cycle()
	h.MustSubmit(st.NewJob("a", "u2").Low().CPU(14, 8).Node("v1").Obj())
	h.MustSubmit(st.NewJob("b", "u2").Low().CPU(16, 8).Node("v2").Obj())
	h.MustSubmit(st.NewJob("c", "u2").Low().CPU(13, 8).Node("p1").Obj())
	h.Cycle()
	require.Equal(t, []string{"v1"}, h.NodesOf("a"))
	require.Equal(t, []string{"p1"}, h.NodesOf("c"))
	j, driver := h.Job("s"), h.Tasks("s")[0]
	require.Equal(t, structs.PoolID("vision"), driver.Pool)
	pod := sched.ExecutorPod{Name: "exec-1", Requests: j.Spark.ExecutorResources()}
	pre, r, err := sched.PreemptForExecutor(h.Snap, j, driver, pod, h.Now)
	require.NoError(t, err)
	assert.Equal(t, []sched.Preemption{{Victim: "a", Preemptor: "s", Tasks: []structs.TaskID{"a-0-a0"}}}, pre, "the least lost in its pool; c, smaller, is in the public pool")
	assert.Equal(t, sched.Reservation{Job: "s", Node: "v1", Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi},
		Kind: sched.ReserveExecutor, Executor: "exec-1"}, r)
	preemptFor(h, pre, r)
	h.Settle()
	h.Cycle()
	tp, err := sched.PlaceExecutor(h.Snap, j, driver, pod)
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "v1", Pool: "vision", Resources: r.Resources}, tp)
}
