package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// An A100 node of 8 GPUs, 56 cores and 944 GB binds 7 cores and 118 GB to
// each GPU (the seed's example).
func a100(name string) *structs.Node {
	n := st.GPUNode(name, "A100", 8)
	n.Capacity.MilliCPU, n.Capacity.Memory = 56000, 944*st.Gi
	return n
}

func TestAcceleratorBinding(t *testing.T) {
	h := st.New(t, a100("n1"))
	h.Quota(u1, structs.ResourceList{"gpu/A100": 8})
	j := st.NewJob("ok", "u1").GPU("A100", 2).Obj()
	j.Resources.MilliCPU, j.Resources.Memory = 4000, 100*st.Gi
	h.MustSubmit(j)
	h.Cycle()
	tasks := h.Tasks("ok")
	require.Len(t, tasks, 1)
	assert.Equal(t, structs.Resources{MilliCPU: 14000, Memory: 236 * st.Gi, AccelType: "A100", Accels: 2}, tasks[0].Resources)
	assert.Equal(t, []int{0, 1}, tasks[0].Accels.Indices())
	assert.Equal(t, int64(2), h.Usage(u1, "gpu/A100"), "charged in GPUs only")
	assert.Zero(t, h.Usage(u1, "cpu"))

	big := st.NewJob("big", "u1").GPU("A100", 2).Obj()
	big.Resources.MilliCPU = 15000
	err := h.Submit(big)
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.Contains(t, err.Error(), "1 binding 7 CPU and 118Gi memory per accelerator, less than asked")
}

func TestCPUJobsStayOffAcceleratorNodes(t *testing.T) {
	h := st.New(t, st.G8("g1", "A"), st.C64("c1"))
	h.Quota(u1, structs.ResourceList{"cpu": 64000, "memory": 256 * st.Gi})
	h.MustSubmit(st.NewJob("cpu", "u1").CPU(8, 32).Obj())
	h.Cycle()
	assert.Equal(t, []string{"c1"}, h.NodesOf("cpu"))
	assert.Equal(t, int64(8000), h.Usage(u1, "cpu"))
	assert.Equal(t, 32*st.Gi, h.Usage(u1, "memory"))

	h2 := st.New(t, st.G8("g1", "A"))
	h2.Quota(u1, structs.ResourceList{"cpu": 64000, "memory": 256 * st.Gi})
	err := h2.Submit(st.NewJob("cpu", "u1").CPU(8, 32).Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.Contains(t, err.Error(), "1 with accelerators (CPU-only jobs run on CPU nodes)")
}

func TestEdgeDevicesAreUnits(t *testing.T) {
	edge := st.CPUNode("e1", 8, 32)
	edge.Capacity.Devices = map[string]int64{"jetson-xavier": 2}
	h := st.New(t, edge, st.C64("c1"))
	h.Quota(u1, structs.ResourceList{"device/jetson-xavier": 2})
	j := st.NewJob("e", "u1").CPU(1, 1).Obj()
	j.Resources.Devices = map[string]int64{"jetson-xavier": 2}
	h.MustSubmit(j)
	h.Cycle()
	assert.Equal(t, []string{"e1"}, h.NodesOf("e"))
	assert.Equal(t, int64(2), h.Usage(u1, "device/jetson-xavier"))
	j2 := st.NewJob("e2", "u1").CPU(1, 1).Obj()
	j2.Resources.Devices = map[string]int64{"jetson-xavier": 1}
	require.ErrorIs(t, h.Submit(j2), sched.ErrQuotaExceeded)
}

// poolCluster: public n1, project pool "vision" p1 (members u1, u2).
func poolCluster(t *testing.T, lend bool) *st.Harness {
	p1 := st.G8("p1", "A")
	p1.Pool = "vision"
	h := st.New(t, st.G8("n1", "A"), p1)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1", "u2"}, LendIdle: lend})
	h.Quota(structs.ProjectScope("vision"), gpuA(8))
	h.Quota(u1, gpuA(8))
	return h
}

func TestPrioritiesAndPools(t *testing.T) {
	t.Run("high runs only in its project's pool and needs one", func(t *testing.T) {
		h := poolCluster(t, false)
		h.MustSubmit(st.NewJob("h", "u1").Project("vision").High().GPU("A", 8).Obj())
		err := h.Submit(st.NewJob("h2", "u1").High().GPU("A", 1).Obj())
		require.ErrorIs(t, err, sched.ErrNotAllowed)
		err = h.Submit(st.NewJob("h3", "u1").Project("nopool").GPU("A", 1).Obj())
		require.EqualError(t, err, "project nopool does not exist: an admin creates it with a pool listing its members (the pool may have no nodes): not allowed")
		err = h.Submit(st.NewJob("h4", "u1").Project("visoin").GPU("A", 1).Obj())
		require.ErrorIs(t, err, sched.ErrNotAllowed)
		require.EqualError(t, err, "project visoin does not exist: did you mean vision? (not allowed)")
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("h"))
		assert.Zero(t, h.Usage(structs.ProjectScope("vision"), "gpu/A"), "high uses no quota")
		h.MustSubmit(st.NewJob("h3", "u2").Project("vision").High().GPU("A", 1).Obj())
		h.Cycle()
		assert.Empty(t, h.Tasks("h3"), "n1 is public: high never goes there")
	})
	t.Run("normal uses its project pool first, uncharged, then public", func(t *testing.T) {
		h := poolCluster(t, false)
		h.MustSubmit(st.NewJob("a", "u1").Project("vision").GPU("A", 8).Obj())
		assert.Equal(t, int64(8), h.Usage(structs.ProjectScope("vision"), "gpu/A"), "charged at submit")
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("a"))
		assert.Zero(t, h.Usage(structs.ProjectScope("vision"), "gpu/A"), "released on placement in the project pool")
		h.MustSubmit(st.NewJob("b", "u2").Project("vision").GPU("A", 8).Obj())
		h.Cycle()
		assert.Equal(t, []string{"n1"}, h.NodesOf("b"))
		assert.Equal(t, int64(8), h.Usage(structs.ProjectScope("vision"), "gpu/A"))
	})
	t.Run("over public quota a project job may still use its pool", func(t *testing.T) {
		h := poolCluster(t, false)
		h.Quota(structs.ProjectScope("vision"), gpuA(0))
		h.MustSubmit(st.NewJob("a", "u1").Project("vision").GPU("A", 8).Obj())
		assert.True(t, h.Job("a").PoolOnly)
		err := h.Submit(st.NewJob("ib", "u1").Project("vision").GPU("A", 8).MPI(2).Obj())
		require.ErrorIs(t, err, sched.ErrUnsatisfiable, "over quota, only the 1-node pool remains: a 2-node gang never fits")
		assert.Contains(t, err.Error(), "can never fit: over public quota, so only the project's pool may be used")
		h.MustSubmit(st.NewJob("b", "u1").Project("vision").GPU("A", 1).Obj())
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("a"))
		assert.Empty(t, h.Tasks("b"), "pool-only jobs never spill to public")
		assert.Contains(t, h.Why("b").Message, "quota exceeded for project:vision: gpu/A quota 0, in use 0, requested 1; "+
			"0/2 nodes fit: 1 in the public pool, which its project's public quota keeps it from")
	})
	t.Run("non-members are refused", func(t *testing.T) {
		h := poolCluster(t, false)
		err := h.Submit(st.NewJob("x", "u9").Project("vision").GPU("A", 1).Obj())
		require.ErrorIs(t, err, sched.ErrNotAllowed)
		assert.EqualError(t, err, "user u9 is not a member of project vision (pool vision): not allowed")
	})
	t.Run("low borrows only pools that lend idle nodes", func(t *testing.T) {
		for _, lend := range []bool{false, true} {
			h := poolCluster(t, lend)
			h.MustSubmit(st.NewJob("l1", "u3").Low().GPU("A", 8).Obj())
			h.MustSubmit(st.NewJob("l2", "u3").Low().GPU("A", 8).Obj())
			h.Cycle()
			assert.Equal(t, []string{"n1"}, h.NodesOf("l1"))
			if lend {
				assert.Equal(t, []string{"p1"}, h.NodesOf("l2"))
			} else {
				assert.Empty(t, h.Tasks("l2"))
			}
		}
	})
	t.Run("the project's own high job preempts a low borrower", func(t *testing.T) {
		h := poolCluster(t, true)
		h.MustSubmit(st.NewJob("l1", "u3").Low().GPU("A", 8).Node("p1").Obj())
		h.Cycle()
		h.MustSubmit(st.NewJob("h", "u1").Project("vision").High().GPU("A", 4).Obj())
		h.Cycle()
		assert.Equal(t, []string{"l1"}, h.Victims())
		h.Settle()
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("h"))
		// The requeued low job (pinned to p1) does not fit beside h.
		assert.Empty(t, h.Tasks("l1"))
		assert.Equal(t, structs.JobPending, h.Job("l1").State)
		assert.Equal(t, "does not fit now; 0/2 nodes fit: 1 not node p1, 1 without enough free resources now", h.Why("l1").Message)
	})
	t.Run("a project job takes its pool back from a low borrower before spending public quota", func(t *testing.T) {
		h := poolCluster(t, true)
		h.MustSubmit(st.NewJob("l1", "u3").Low().GPU("A", 8).Node("p1").Obj())
		h.Cycle()
		h.MustSubmit(st.NewJob("a", "u1").Project("vision").GPU("A", 8).Obj())
		h.Cycle()
		assert.Equal(t, []string{"l1"}, h.Victims(), "n1 is free, but the project's own pool comes first")
		h.Settle()
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("a"))
		assert.Zero(t, h.Usage(structs.ProjectScope("vision"), "gpu/A"), "no public quota spent")
	})
	t.Run("normal never preempts normal", func(t *testing.T) {
		h := st.New(t, st.G8("n1", "A"))
		h.Quota(u1, gpuA(8))
		h.Quota(u2, gpuA(8))
		h.MustSubmit(st.NewJob("a", "u1").GPU("A", 8).Obj())
		h.Cycle()
		h.MustSubmit(st.NewJob("b", "u2").GPU("A", 8).Obj())
		h.Cycle()
		assert.Empty(t, h.Victims())
		assert.Empty(t, h.Tasks("b"))
	})
}

func TestServiceMinAvailable(t *testing.T) {
	h := st.New(t, st.GPUNode("n1", "A", 2), st.GPUNode("n2", "A", 2))
	h.Quota(u1, gpuA(8))
	h.Quota(u2, gpuA(8))
	h.MustSubmit(st.NewJob("hog", "u2").GPU("A", 2).Node("n1").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("s", "u1").Service(4, 3).GPU("A", 1).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("s"), "2 free GPUs: fewer than minAvailable 3, so nothing starts")
	h.Finish("hog", structs.JobSucceeded)
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 4)
	// Lose room for one replica: the service runs with 3, the 4th comes back when room appears.
	require.NoError(t, h.Scale("s", 3))
	h.MustSubmit(st.NewJob("hog2", "u2").GPU("A", 1).Obj())
	h.Cycle()
	require.NoError(t, h.Scale("s", 4))
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 3)
	h.Finish("hog2", structs.JobSucceeded)
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 4)
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))
}

// Scaling down a partly pending service leaves no phantom usage.
func TestC06ScaleDownPartlyPending(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(16))
	h.Quota(u2, gpuA(8))
	h.MustSubmit(st.NewJob("s", "u1").Service(10, 1).GPU("A", 1).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 8)
	assert.Equal(t, int64(10), h.Usage(u1, "gpu/A"))
	require.NoError(t, h.Scale("s", 4))
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 4)
	assert.Equal(t, 4, h.UsedAccels("n1"))
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))
	require.NoError(t, h.Scale("s", 6))
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 6)
	assert.Equal(t, int64(6), h.Usage(u1, "gpu/A"))
	assert.Equal(t, 6, h.UsedAccels("n1"))
	h.MustSubmit(st.NewJob("k", "u2").GPU("A", 2).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("k"), 1)
	assert.Equal(t, 8, h.UsedAccels("n1"))
	var idx []int
	for _, tk := range h.Tasks("s") {
		idx = append(idx, tk.Index)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, idx)
}

// Scale-down removes crash-looping replicas before healthy ones.
func TestC24ScaleDownOrder(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := st.NewJob("s", "u1").Service(5, 3).CPU(4, 4).Obj()
	var tasks []*structs.Task
	for i := range 5 {
		tasks = append(tasks, &structs.Task{ID: structs.MakeTaskID("s", i, 0), Job: "s", Index: i, State: structs.TaskRunning,
			Healthy: i < 3, StartedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	tasks[3].Restarts, tasks[4].Restarts = 4, 7
	p, err := sched.ScaleDown(j, tasks, 3)
	require.NoError(t, err)
	assert.ElementsMatch(t, []structs.TaskID{"s-3-a0", "s-4-a0"}, p.Stop)
	assert.Empty(t, p.Reindex)

	// Crash-loopers at low indices: the survivors take their indices.
	tasks[0].Healthy, tasks[0].Restarts = false, 3
	tasks[3].Healthy, tasks[3].Restarts = true, 0
	tasks[4].Healthy, tasks[4].Restarts = true, 0
	p, err = sched.ScaleDown(j, tasks, 3)
	require.NoError(t, err)
	assert.Equal(t, []structs.TaskID{"s-0-a0", "s-4-a0"}, p.Stop, "the crash-looper, then the newest running")
	assert.Equal(t, map[structs.TaskID]int{"s-3-a0": 0}, p.Reindex)

	// One pending replica: scaling 6 -> 5 stops nothing.
	j.Replicas = 6
	p, err = sched.ScaleDown(j, tasks, 5)
	require.NoError(t, err)
	assert.Empty(t, p.Stop)

	_, err = sched.ScaleDown(j, tasks, 2)
	require.EqualError(t, err, "replicas 2 is below minAvailable 3: scale to 3 or more, or to 0 to park the service")
}

func TestPendingLadderDowngrades(t *testing.T) {
	h := st.New(t, st.GPUNode("n1", "A", 4), st.GPUNode("n2", "A", 4), st.GPUNode("b1", "B", 8))
	h.Quota(u1, structs.ResourceList{"gpu/A": 8, "gpu/B": 8})
	h.Quota(u2, structs.ResourceList{"gpu/B": 8})
	h.MustSubmit(st.NewJob("hog", "u2").GPU("B", 8).Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("j", "u1").GPU("B", 8).Fallback(2, "A", 4).DowngradeAfter(5 * time.Minute).Obj())
	assert.Equal(t, int64(8), h.Usage(u1, "gpu/B"))
	h.Cycle()
	assert.Empty(t, h.Tasks("j"))
	h.Advance(5 * time.Minute)
	p := h.Cycle()
	require.Len(t, p.Placements, 1)
	assert.Equal(t, 1, p.Placements[0].Shape)
	assert.ElementsMatch(t, []string{"n1", "n2"}, h.NodesOf("j"))
	assert.Equal(t, 1, h.Job("j").Shape, "the shape it ran with is recorded")
	assert.Equal(t, int64(8), h.Usage(u1, "gpu/A"), "the charge moved to the shape it runs with")
	assert.Zero(t, h.Usage(u1, "gpu/B"))
}

func TestJobAffinity(t *testing.T) {
	h := st.New(t, st.C64("c1"), st.C64("c2"))
	h.Quota(u1, structs.ResourceList{"cpu": 128000, "memory": 512 * st.Gi})
	h.MustSubmit(st.NewJob("db", "u1").CPU(8, 8).Node("c2").Labels("app", "db").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("near", "u1").CPU(1, 1).With("app=db").Obj())
	h.MustSubmit(st.NewJob("far", "u1").CPU(1, 1).Away("app=db").Obj())
	h.MustSubmit(st.NewJob("spread", "u1").Kind(structs.KindMPI).Replicas(2).CPU(1, 1).Spread().Obj())
	h.Cycle()
	assert.Equal(t, []string{"c2"}, h.NodesOf("near"))
	assert.Equal(t, []string{"c1"}, h.NodesOf("far"))
	assert.ElementsMatch(t, []string{"c1", "c2"}, h.NodesOf("spread"))
}

// The oldest blocked gang reserves nodes; smaller jobs backfill elsewhere
// and cannot starve it.
func TestGangReservationAndBackfill(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"))
	h.Quota(u1, gpuA(24))
	h.Quota(u2, gpuA(24))
	h.MustSubmit(st.NewJob("a", "u2").GPU("A", 4).Node("n1").Obj())
	h.MustSubmit(st.NewJob("b", "u2").GPU("A", 2).Node("n2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("c", "u2").GPU("A", 1).Node("n3").Obj())
	h.Cycle()
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("gang", "u1").MPI(2).GPU("A", 8).Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("small", "u2").GPU("A", 4).Obj())
	p := h.Cycle()
	var held []string
	for _, r := range p.Reservations {
		assert.Equal(t, structs.JobID("gang"), r.Job)
		assert.Equal(t, sched.ReserveGang, r.Kind)
		held = append(held, string(r.Node))
	}
	assert.ElementsMatch(t, []string{"n3", "n2"}, held, "the nodes with the most free GPUs")
	assert.Equal(t, []string{"n1"}, h.NodesOf("small"), "backfilled outside the reservation")
	h.MustSubmit(st.NewJob("small2", "u2").GPU("A", 1).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("small2"))
	assert.Contains(t, h.Why("small2").Message, "2 reserved for job gang")
	h.Finish("b", structs.JobSucceeded)
	h.Finish("c", structs.JobSucceeded)
	h.Cycle()
	assert.ElementsMatch(t, []string{"n2", "n3"}, h.NodesOf("gang"))
	assert.Empty(t, h.Last.Reservations)
}
