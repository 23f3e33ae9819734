package sched_test

// Review tests: the README's promises, checked from a newcomer's reading,
// plus hostile inputs for Schedule and the spec parsers. Bugs found while
// writing them are not here (they fail); they are reported separately.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

var (
	rvU1     = structs.UserScope("u1")
	rvU2     = structs.UserScope("u2")
	rvVision = structs.ProjectScope("vision")
	rvT0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func rvGPU(t string, n int64) structs.ResourceList { return structs.ResourceList{structs.GPUKey(t): n} }

// rvPoolCluster: public n1, project pool "vision" p1 (members u1, u2).
func rvPoolCluster(t *testing.T, lend bool) *st.Harness {
	p1 := st.G8("p1", "A")
	p1.Pool = "vision"
	h := st.New(t, st.G8("n1", "A"), p1)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1", "u2"}, LendIdle: lend})
	h.Quota(rvVision, rvGPU("A", 8))
	h.Quota(rvU1, rvGPU("A", 8))
	return h
}

func TestReviewCPUAndMemoryAreBoundToGPUs(t *testing.T) {
	n := st.G8("n1", "A100")
	n.Capacity.MilliCPU, n.Capacity.Memory = 56000, 944*st.Gi // README: 7 cores, 118 GB per GPU
	h := st.New(t, n)
	h.Quota(rvU1, rvGPU("A100", 8))
	j := st.NewJob("two", "u1").GPU("A100", 2).Obj()
	j.Resources.MilliCPU = 14000 // exactly what 2 GPUs carry
	h.MustSubmit(j)
	h.Cycle()
	require.Len(t, h.Tasks("two"), 1)
	got := h.Tasks("two")[0].Resources
	assert.Equal(t, int64(14000), got.MilliCPU)
	assert.Equal(t, 236*st.Gi, got.Memory)

	for name, mod := range map[string]func(*structs.Job){
		"cpu":    func(j *structs.Job) { j.Resources.MilliCPU = 14001 },
		"memory": func(j *structs.Job) { j.Resources.Memory = 236*st.Gi + 1 },
	} {
		j := st.NewJob("over-"+name, "u1").GPU("A100", 2).Obj()
		mod(j)
		err := h.Submit(j)
		require.ErrorIs(t, err, sched.ErrUnsatisfiable, name)
		assert.Contains(t, err.Error(), "binding 7 CPU and 118Gi memory per accelerator, less than asked")
	}
}

func TestReviewCPUOnlyJobsStayOffGPUNodes(t *testing.T) {
	h := st.New(t, st.G8("g1", "A"), st.G8("g2", "A"), st.CPUNode("c1", 4, 16))
	h.Quota(rvU1, structs.ResourceList{"cpu": 64000, "memory": 256 * st.Gi})
	h.MustSubmit(st.NewJob("fits", "u1").CPU(4, 16).Obj())
	mem := st.NewJob("mem-only", "u1").Obj()
	mem.Resources.Memory = st.Gi
	h.MustSubmit(mem)
	h.Cycle()
	assert.Equal(t, []string{"c1"}, h.NodesOf("fits"))
	assert.Empty(t, h.Tasks("mem-only"), "the CPU node is full; the idle GPU nodes are not used")
	assert.Contains(t, h.Why("mem-only").Message, "2 with accelerators (CPU-only jobs run on CPU nodes)")
	assert.Zero(t, h.UsedAccels("g1")+h.UsedAccels("g2"))

	err := h.Submit(st.NewJob("too-big", "u1").CPU(8, 1).Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable, "8 cores fit only on the GPU nodes: refused")
}

func TestReviewPriorityAndPoolTable(t *testing.T) {
	t.Run("high: its project's pool only, no quota", func(t *testing.T) {
		h := rvPoolCluster(t, false)
		h.MustSubmit(st.NewJob("h1", "u1").Project("vision").High().GPU("A", 8).Obj())
		h.MustSubmit(st.NewJob("h2", "u1").Project("vision").High().GPU("A", 8).Obj())
		assert.Empty(t, h.Snap.Usage[rvVision], "high is not charged at submit")
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("h1"))
		assert.Empty(t, h.Tasks("h2"), "the public n1 is free but high never goes there")
		assert.Contains(t, h.Why("h2").Message, "1 in pools this job may not use")
		err := h.Submit(st.NewJob("h3", "u1").Project("nopool").High().GPU("A", 1).Obj())
		require.ErrorIs(t, err, sched.ErrNotAllowed)
	})
	t.Run("normal: pool first and uncharged, then public and charged", func(t *testing.T) {
		h := rvPoolCluster(t, false)
		h.MustSubmit(st.NewJob("a", "u1").Project("vision").GPU("A", 8).Obj())
		assert.Equal(t, int64(8), h.Usage(rvVision, "gpu/A"), "charged at submit")
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("a"))
		assert.Zero(t, h.Usage(rvVision, "gpu/A"), "released when it landed in the pool")
		assert.Nil(t, h.Job("a").Charged)
		h.MustSubmit(st.NewJob("b", "u2").Project("vision").GPU("A", 8).Obj())
		h.Cycle()
		assert.Equal(t, []string{"n1"}, h.NodesOf("b"))
		assert.Equal(t, int64(8), h.Usage(rvVision, "gpu/A"), "charged in the public pool")
	})
	t.Run("low: public, then only pools that lend", func(t *testing.T) {
		for _, lend := range []bool{false, true} {
			h := rvPoolCluster(t, lend)
			h.MustSubmit(st.NewJob("l1", "u9").Low().GPU("A", 8).Obj())
			h.MustSubmit(st.NewJob("l2", "u9").Low().GPU("A", 8).Obj())
			assert.Empty(t, h.Snap.Usage[structs.UserScope("u9")], "low needs no quota")
			h.Cycle()
			assert.Equal(t, []string{"n1"}, h.NodesOf("l1"))
			if lend {
				assert.Equal(t, []string{"p1"}, h.NodesOf("l2"))
			} else {
				assert.Empty(t, h.Tasks("l2"))
			}
		}
	})
	t.Run("only members submit to a project with a pool, at any priority", func(t *testing.T) {
		h := rvPoolCluster(t, true)
		for _, b := range []*st.JobBuilder{
			st.NewJob("x", "u9").Project("vision").GPU("A", 1),
			st.NewJob("y", "u9").Project("vision").Low().GPU("A", 1),
			st.NewJob("z", "u9").Project("vision").High().GPU("A", 1),
		} {
			require.ErrorIs(t, h.Submit(b.Obj()), sched.ErrNotAllowed)
		}
		assert.Empty(t, h.Snap.Jobs)
	})
	t.Run("higher priority is placed first", func(t *testing.T) {
		h := rvPoolCluster(t, false)
		h.MustSubmit(st.NewJob("old-normal", "u1").Project("vision").GPU("A", 8).Node("p1").Obj())
		h.Advance(time.Minute)
		h.MustSubmit(st.NewJob("new-high", "u1").Project("vision").High().GPU("A", 8).Obj())
		h.Cycle()
		assert.Equal(t, []string{"p1"}, h.NodesOf("new-high"))
		assert.Empty(t, h.Tasks("old-normal"))
	})
}

func TestReviewQuotaIsChargedAtSubmitAndReleased(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.C64("c1"))
	h.Quota(rvU1, structs.ResourceList{"gpu/A": 8, "gpu": 2, "cpu": 8000, "memory": 32 * st.Gi})

	h.MustSubmit(st.NewJob("typed", "u1").GPU("A", 4).Obj())
	h.MustSubmit(st.NewJob("any", "u1").GPU("", 2).Obj())
	h.MustSubmit(st.NewJob("cpu", "u1").CPU(8, 32).Obj())
	assert.Equal(t, structs.ResourceList{"gpu/A": 4, "gpu": 2, "cpu": 8000, "memory": 32 * st.Gi}, h.Snap.Usage[rvU1],
		"charged at submit: typed GPUs by type, untyped under gpu, CPU jobs in cpu and memory only")
	err := h.Submit(st.NewJob("over", "u1").GPU("A", 5).Obj())
	require.ErrorIs(t, err, sched.ErrQuotaExceeded)
	assert.EqualError(t, err, "quota exceeded for user:u1: gpu/A quota 8, in use 4, requested 5")
	err = h.Submit(st.NewJob("no-quota", "u7").GPU("A", 1).Obj())
	assert.EqualError(t, err, "quota exceeded for user:u7: gpu/A quota 0, in use 0, requested 1", "a key not listed is 0")

	h.Cycle()
	assert.Len(t, h.Tasks("typed"), 1)
	assert.Equal(t, int64(4), h.Usage(rvU1, "gpu/A"), "a running job holds its charge")
	h.Finish("typed", structs.JobSucceeded)
	assert.Zero(t, h.Usage(rvU1, "gpu/A"), "released when it ends")
	h.Finish("any", structs.JobCancelled)
	assert.Zero(t, h.Usage(rvU1, "gpu"), "released when cancelled")

	// Released on pending timeout.
	h.MustSubmit(st.NewJob("blocked", "u1").GPU("A", 8).Selector("rack=none").Timeout(5 * time.Minute).Obj())
	assert.Equal(t, int64(8), h.Usage(rvU1, "gpu/A"), "a pending job holds quota like a running one")
	h.Advance(5 * time.Minute)
	p := h.Cycle()
	require.Len(t, p.Timeouts, 1)
	assert.Equal(t, structs.JobFailed, h.Job("blocked").State)
	assert.Equal(t, structs.ReasonPendingTimeout, h.Job("blocked").Reason)
	assert.Zero(t, h.Usage(rvU1, "gpu/A"), "released on timeout")
}

func TestReviewProjectJobOverPublicQuotaRunsOnlyInItsPool(t *testing.T) {
	h := rvPoolCluster(t, false)
	h.Quota(rvVision, rvGPU("A", 4))
	h.MustSubmit(st.NewJob("big", "u1").Project("vision").GPU("A", 8).Obj())
	assert.True(t, h.Job("big").PoolOnly)
	assert.Empty(t, h.Snap.Usage[rvVision], "accepted uncharged")
	h.MustSubmit(st.NewJob("big2", "u1").Project("vision").GPU("A", 8).Obj())
	h.Cycle()
	assert.Equal(t, []string{"p1"}, h.NodesOf("big"))
	assert.Empty(t, h.Tasks("big2"), "n1 is free, but pool-only jobs never spill to public")
	err := h.Submit(st.NewJob("solo", "u1").GPU("A", 9).Obj())
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
}

func TestReviewGangsAreAllOrNothingInOneCluster(t *testing.T) {
	a1, a2, b1 := st.G8("a1", "A"), st.G8("a2", "A"), st.G8("b1", "A")
	a1.Cluster, a2.Cluster, b1.Cluster = "ca", "ca", "cb"
	h := st.New(t, a1, a2, b1)
	h.Quota(rvU1, rvGPU("A", 64))
	h.Quota(rvU2, rvGPU("A", 64))
	h.MustSubmit(st.NewJob("hog", "u2").GPU("A", 4).Node("a2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("g", "u1").MPI(2).GPU("A", 8).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("g"), "a1 and b1 are free but in two clusters; a2 is half used")
	assert.Zero(t, h.UsedAccels("a1")+h.UsedAccels("b1"), "nothing is held by a gang that does not fit")
	assert.Contains(t, h.Why("g").Message, "gang needs 2 replicas")
	h.Finish("hog", structs.JobSucceeded)
	h.Cycle()
	assert.ElementsMatch(t, []string{"a1", "a2"}, h.NodesOf("g"))
}

func TestReviewServiceStartsAtMinAvailableAndFillsUp(t *testing.T) {
	h := st.New(t, st.GPUNode("n1", "A", 2), st.GPUNode("n2", "A", 2))
	h.Quota(rvU1, rvGPU("A", 8))
	h.Quota(rvU2, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("hog", "u2").GPU("A", 1).Node("n1").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("svc", "u1").Service(4, 3).GPU("A", 1).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("svc"), 3, "3 fit: minAvailable met, so it starts")
	assert.Equal(t, structs.JobRunning, h.Job("svc").State)
	h.Finish("hog", structs.JobSucceeded)
	h.Cycle()
	assert.Len(t, h.Tasks("svc"), 4, "the rest follow as room appears")
	assert.Equal(t, int64(4), h.Usage(rvU1, "gpu/A"))
}

func TestReviewScaleDownOrderAndFloor(t *testing.T) {
	j := st.NewJob("s", "u1").Service(7, 1).CPU(1, 1).Obj()
	mk := func(i int, state structs.TaskState, healthy bool, restarts int, started time.Duration) *structs.Task {
		return &structs.Task{ID: structs.MakeTaskID("s", i, 0), Job: "s", Index: i, State: state, Healthy: healthy,
			Restarts: restarts, StartedAt: rvT0.Add(started)}
	}
	live := []*structs.Task{ // replica 6 is pending (no task)
		mk(0, structs.TaskRunning, true, 0, 1*time.Minute),
		mk(1, structs.TaskRunning, true, 0, 3*time.Minute), // newest running
		mk(2, structs.TaskFailed, false, 0, 2*time.Minute),
		mk(3, structs.TaskRunning, false, 5, 4*time.Minute), // crash-looping
		mk(4, structs.TaskRunning, true, 0, 2*time.Minute),
		mk(5, structs.TaskScheduled, false, 0, 0), // starting
	}
	want := map[int][]structs.TaskID{
		6: nil,                                      // the pending replica goes first
		5: {"s-3-a0"},                               // then failed or crash-looping, newest first
		4: {"s-3-a0", "s-2-a0"},                     //
		3: {"s-3-a0", "s-2-a0", "s-5-a0"},           // then the starting one
		2: {"s-3-a0", "s-2-a0", "s-5-a0", "s-1-a0"}, // then running, newest first
		1: {"s-3-a0", "s-2-a0", "s-5-a0", "s-1-a0", "s-4-a0"},
		0: {"s-3-a0", "s-2-a0", "s-5-a0", "s-1-a0", "s-4-a0", "s-0-a0"}, // parked: all stop
	}
	for to, stop := range want {
		p, err := sched.ScaleDown(j, live, to)
		require.NoError(t, err)
		assert.Equal(t, stop, p.Stop, "7 -> %d", to)
		stopped := map[structs.TaskID]bool{}
		for _, id := range p.Stop {
			stopped[id] = true
		}
		seen := map[int]bool{}
		for _, tk := range live {
			if stopped[tk.ID] {
				continue
			}
			idx := tk.Index
			if n, ok := p.Reindex[tk.ID]; ok {
				idx = n
			}
			assert.Less(t, idx, to, "survivors keep indices below %d", to)
			assert.False(t, seen[idx], "index %d given twice", idx)
			seen[idx] = true
		}
	}
	j.MinAvailable = 3
	_, err := sched.ScaleDown(j, live, 2)
	require.EqualError(t, err, "replicas 2 is below minAvailable 3: scale to 3 or more, or to 0 to park the service")
	p, err := sched.ScaleDown(j, live, 0)
	require.NoError(t, err, "0 parks a service whatever its minAvailable")
	assert.Len(t, p.Stop, 6)
	assert.Empty(t, p.Reindex)
	_, err = sched.ScaleDown(j, live, -1)
	require.EqualError(t, err, "replicas -1 is not allowed: scale to 0 (park the service) or more (cancel the job to end it)")
}

func TestReviewPreemptionOnlyWhenItMakesTheJobFit(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(rvU1, rvGPU("A", 32))
	h.Quota(rvU2, rvGPU("A", 16))
	h.MustSubmit(st.NewJob("low", "u9").Low().GPU("A", 8).Node("n1").Obj())
	h.MustSubmit(st.NewJob("normal", "u2").GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("gang", "u1").MPI(2).GPU("A", 8).Obj())
	h.MustSubmit(st.NewJob("single", "u1").GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	assert.Empty(t, h.Victims(), "evicting low frees one node; the gang needs two and single needs n2 (normal never preempts normal)")
	assert.Len(t, h.Tasks("low"), 1)
	h.Finish("gang", structs.JobCancelled) // its reservation would keep n1 for itself
	h.Finish("single", structs.JobCancelled)
	h.MustSubmit(st.NewJob("fits", "u1").GPU("A", 8).Node("n1").Obj())
	h.Cycle()
	assert.Equal(t, []string{"low"}, h.Victims())
}

func TestReviewVictimGangIsEvictedWhole(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(rvU1, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("lg", "u9").Low().MPI(2).GPU("A", 4).Spread().Obj())
	h.MustSubmit(st.NewJob("lfill1", "u9").Low().GPU("A", 4).Node("n1").Obj())
	h.MustSubmit(st.NewJob("lfill2", "u9").Low().GPU("A", 4).Node("n2").Obj())
	h.Cycle()
	require.Len(t, h.Tasks("lg"), 2)
	h.Advance(time.Minute)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Obj())
	p := h.Cycle()
	require.Len(t, p.Preemptions, 2, "one node: the gang (whole) plus the filler there")
	for _, pr := range p.Preemptions {
		if pr.Victim == "lg" {
			assert.Len(t, pr.Tasks, 2, "both replicas of the low gang stop, even the one on the other node")
		}
	}
	h.Settle()
	h.Cycle()
	require.Len(t, h.Tasks("n"), 1)
	assert.Equal(t, structs.JobPending, h.Job("lg").State)
	assert.Equal(t, structs.ReasonPreempted, h.Job("lg").Reason)
	assert.Empty(t, h.Tasks("lg"), "the requeued gang does not come back half")
}

// What the victims free is reserved for the preemptor: neither an older
// job that just became eligible nor the victim itself takes it.
func TestReviewFreedRoomIsReservedForThePreemptor(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(rvU1, rvGPU("A", 8))
	h.Quota(rvU2, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("victim", "u9").Low().GPU("A", 8).Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("older", "u2").GPU("A", 4).Selector("x=y").Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("preemptor", "u1").GPU("A", 8).Obj())
	p := h.Cycle()
	assert.Equal(t, []string{"victim"}, h.Victims(), "older cannot fit anywhere, so only preemptor preempts")
	require.Len(t, p.Reservations, 1)
	assert.Equal(t, sched.Reservation{Job: "preemptor", Node: "n1", Kind: sched.ReservePreemption,
		Resources: structs.Resources{MilliCPU: 96000, Memory: 768 * st.Gi, AccelType: "A", Accels: 8}}, p.Reservations[0])
	h.Cycle()
	assert.Empty(t, h.Victims(), "no second round of evictions while the victim stops")
	h.Node("n1").Tags["x"] = "y" // older could now use n1
	h.Settle()
	h.MustSubmit(st.NewJob("late-low", "u9").Low().GPU("A", 1).Obj())
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("preemptor"))
	assert.Empty(t, h.Tasks("older"))
	assert.Empty(t, h.Tasks("victim"))
	assert.Empty(t, h.Tasks("late-low"))
	assert.Empty(t, h.Last.Reservations, "dropped once the preemptor is placed")
}

func TestReviewBackfillAroundTheOldestGangsReservation(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"), st.G8("n4", "A"))
	h.Quota(rvU1, rvGPU("A", 64))
	h.Quota(rvU2, rvGPU("A", 64))
	for i, n := range []string{"n1", "n2", "n3", "n4"} {
		h.MustSubmit(st.NewJob("run"+n, "u2").GPU("A", int64(6-i)).Node(n).Obj()) // free: 2, 3, 4, 5
	}
	h.Cycle()
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("gang", "u1").MPI(2).GPU("A", 8).Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("gang2", "u1").MPI(2).GPU("A", 8).Obj())
	h.Advance(time.Second)
	h.MustSubmit(st.NewJob("small", "u2").GPU("A", 2).Obj())
	p := h.Cycle()
	var held []string
	for _, r := range p.Reservations {
		assert.Equal(t, structs.JobID("gang"), r.Job, "only the oldest blocked gang in the pool reserves")
		held = append(held, string(r.Node))
	}
	assert.ElementsMatch(t, []string{"n3", "n4"}, held, "the nodes with the most free room")
	assert.Equal(t, []string{"n1"}, h.NodesOf("small"), "backfilled outside the reservation (best fit)")
	h.MustSubmit(st.NewJob("small2", "u2").GPU("A", 4).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("small2"), "would fit only on reserved nodes")
	assert.Contains(t, h.Why("small2").Message, "2 reserved for job gang")
	h.Finish("runn3", structs.JobSucceeded)
	h.Finish("runn4", structs.JobSucceeded)
	h.Cycle()
	assert.ElementsMatch(t, []string{"n3", "n4"}, h.NodesOf("gang"))
	assert.Empty(t, h.Tasks("gang2"))
}

func TestReviewPendingLadderAndTimeout(t *testing.T) {
	h := st.New(t, st.GPUNode("a1", "A", 4), st.GPUNode("a2", "A", 4), st.G8("b1", "B"))
	h.Quota(rvU1, structs.ResourceList{"gpu/A": 8, "gpu/B": 8})
	h.Quota(rvU2, structs.ResourceList{"gpu/B": 8})
	h.MustSubmit(st.NewJob("hog", "u2").GPU("B", 8).Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("j", "u1").MPI(1).GPU("B", 8).Fallback(2, "A", 4).DowngradeAfter(10 * time.Minute).Timeout(time.Hour).Obj())
	h.Advance(10*time.Minute - time.Second)
	h.Cycle()
	assert.Empty(t, h.Tasks("j"), "fallbacks are not tried before downgradeAfter")
	h.Advance(time.Second)
	p := h.Cycle()
	require.Len(t, p.Placements, 1)
	assert.Equal(t, 1, p.Placements[0].Shape)
	assert.Equal(t, 1, h.Job("j").Shape, "records the shape it ran with")
	assert.ElementsMatch(t, []string{"a1", "a2"}, h.NodesOf("j"))
	assert.Equal(t, structs.ResourceList{"gpu/A": 8}, h.Snap.Usage[rvU1], "the charge moved to that shape")
}

func TestReviewPendingTimeoutCountsFromLastBecomingPending(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(rvU1, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("low", "u9").Low().GPU("A", 8).Timeout(10 * time.Minute).Obj())
	h.Cycle()
	h.Advance(9 * time.Minute)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Obj())
	h.Cycle()
	h.Settle() // low is requeued now, 9 minutes after submit
	h.Cycle()
	h.Advance(9 * time.Minute)
	p := h.Cycle()
	assert.Empty(t, p.Timeouts, "18 minutes after submit, 9 after requeue: not yet")
	assert.Equal(t, structs.JobPending, h.Job("low").State)
	h.Advance(time.Minute)
	p = h.Cycle()
	require.Len(t, p.Timeouts, 1)
	assert.Equal(t, structs.JobFailed, h.Job("low").State)
	require.NotNil(t, p.Timeouts[0].Why, "the last reason is kept in the final status")
	assert.Contains(t, p.Timeouts[0].Why.Message, "does not fit now")
}

func TestReviewWhyPendingMessages(t *testing.T) {
	n1, n2 := st.G8("n1", "A"), st.G8("n2", "A")
	n1.Tags["fabric"] = "ib"
	n2.Taints = append(n2.Taints, st.Taint("maint", "true"))
	h := st.New(t, n1, n2, st.G8("b1", "B"), st.G8("b2", "B"))
	h.Quota(rvU1, structs.ResourceList{"gpu/A": 8, "gpu/B": 17})
	h.Quota(rvU2, structs.ResourceList{"gpu/B": 8})
	h.MustSubmit(st.NewJob("hog", "u2").GPU("B", 8).Node("b1").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("never", "u1").GPU("B", 1).Selector("maint=true").Obj())
	h.MustSubmit(st.NewJob("now", "u1").MPI(2).GPU("B", 8).Obj())
	h.MustSubmit(st.NewJob("taint", "u1").GPU("A", 8).Selector("fabric!=ib").Obj())
	h.Cycle()
	assert.Equal(t, "can never fit; 0/4 nodes fit: 2 not matching selector maint=true, 2 with no B accelerators", h.Why("never").Message)
	assert.True(t, h.Why("never").NeverFits)
	assert.Equal(t, "does not fit now; gang needs 2 replicas: 1 fit now, at most 2 on empty nodes; 1/4 nodes fit: 2 with no B accelerators, 1 without enough free resources now", h.Why("now").Message)
	assert.False(t, h.Why("now").NeverFits)
	assert.Equal(t, 1, h.Why("now").Fit, "b2 fits a replica now; the counts and the fit add up to the nodes")
	assert.Equal(t, "can never fit; 0/4 nodes fit: 2 with no A accelerators, 1 not matching selector fabric!=ib, 1 with untolerated taint maint=true:NoSchedule", h.Why("taint").Message)
	assert.Equal(t, []sched.Count{{Reason: "with no A accelerators", Nodes: 2}, {Reason: "not matching selector fabric!=ib", Nodes: 1},
		{Reason: "with untolerated taint maint=true:NoSchedule", Nodes: 1}}, h.Why("taint").Filtered, "reasons are data too")
}

// README's third example: a downgrade to another type whose quota is used up.
func TestReviewWaitingForQuotaAfterDowngrade(t *testing.T) {
	h := st.New(t, st.G8("a1", "A"), st.G8("a2", "A"), st.G8("b1", "B"))
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}}) // a project without machines
	h.Quota(rvVision, structs.ResourceList{"gpu/A": 8, "gpu/B": 8})
	h.Quota(rvU2, structs.ResourceList{"gpu/B": 8})
	h.MustSubmit(st.NewJob("hogb", "u2").GPU("B", 8).Obj())
	h.MustSubmit(st.NewJob("usesa", "u1").Project("vision").GPU("A", 8).Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("j", "u1").Project("vision").GPU("B", 8).Fallback(1, "A", 8).DowngradeAfter(time.Minute).Obj())
	h.Advance(time.Minute)
	h.Cycle()
	require.NotNil(t, h.Why("j"))
	assert.True(t, strings.HasPrefix(h.Why("j").Message,
		"waiting for quota; quota exceeded for project:vision: gpu/A quota 8, in use 8, requested 8"), h.Why("j").Message)
	assert.Zero(t, h.UsedAccels("a2"), "a2 is free but quota stops the fallback")
}

func TestReviewRefusedAtSubmit(t *testing.T) {
	p1, p2 := st.G8("p1", "A"), st.G8("p2", "A")
	p1.Pool, p2.Pool = "vision", "vision"
	n1, n2 := st.G8("n1", "A"), st.G8("n2", "A")
	n1.State = structs.NodeNotReady
	h := st.New(t, n1, n2, p1, p2)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}})
	h.Quota(rvU1, rvGPU("A", 4))
	h.Quota(rvVision, rvGPU("A", 64))

	cases := map[string]struct {
		j       *structs.Job
		target  error
		message string
	}{
		"unknown type":         {st.NewJob("a", "u1").GPU("H800", 1).Obj(), nil, `unknown accelerator type "H800": this cluster has A`},
		"unknown node":         {st.NewJob("b", "u1").GPU("A", 1).Node("n9").Obj(), sched.ErrUnsatisfiable, "node n9 does not exist: can never fit"},
		"9 GPUs":               {st.NewJob("d", "u1").GPU("A", 9).Obj(), sched.ErrUnsatisfiable, "at most 8 accelerators on one node, 9 asked per replica"},
		"3-node gang, 2 nodes": {st.NewJob("e", "u1").Project("vision").High().MPI(3).GPU("A", 8).Obj(), sched.ErrUnsatisfiable, "gang needs 3 replicas"},
		"over quota":           {st.NewJob("f", "u1").GPU("A", 8).Obj(), sched.ErrQuotaExceeded, "quota exceeded for user:u1: gpu/A quota 4, in use 0, requested 8"},
		"high without a pool":  {st.NewJob("g", "u1").High().GPU("A", 1).Obj(), sched.ErrNotAllowed, "priority high runs only in a project's pool"},
	}
	cl := st.NewJob("c", "u1").GPU("A", 1).Obj()
	cl.Cluster = "elsewhere"
	cases["unknown cluster"] = struct {
		j       *structs.Job
		target  error
		message string
	}{cl, nil, `cluster "elsewhere" does not exist`}
	for name, c := range cases {
		err := h.Submit(c.j)
		require.Error(t, err, name)
		if c.target != nil {
			assert.ErrorIs(t, err, c.target, name)
		}
		assert.Contains(t, err.Error(), c.message, name)
	}
	assert.Empty(t, h.Snap.Jobs)
	assert.Empty(t, h.Snap.Usage[rvU1])

	// Readiness, tags and taints can change: a job needing the not-ready n1 waits instead.
	h.MustSubmit(st.NewJob("two", "u1").Low().MPI(2).GPU("A", 8).Obj())
	h.MustSubmit(st.NewJob("sel", "u1").GPU("A", 1).Selector("rack=r9").Obj())
	h.Cycle()
	assert.Contains(t, h.Why("two").Message, "1 not ready")
	assert.True(t, strings.HasPrefix(h.Why("two").Message, "does not fit now"), "a node not ready comes back: %s", h.Why("two").Message)
	assert.Contains(t, h.Why("sel").Message, "can never fit")
}

func TestReviewBestFitLeavesLargeHolesWhole(t *testing.T) {
	h := st.New(t, st.G8("g1", "A"), st.G8("g2", "A"), st.G8("g3", "A"), st.C64("c1"), st.C64("c2"), st.C64("c3"))
	h.Quota(rvU1, structs.ResourceList{"gpu/A": 64, "cpu": 256000, "memory": 1024 * st.Gi})
	h.MustSubmit(st.NewJob("f1", "u1").GPU("A", 6).Node("g1").Obj()) // g1: 2 free
	h.MustSubmit(st.NewJob("f3", "u1").GPU("A", 4).Node("g3").Obj()) // g3: 4 free
	h.MustSubmit(st.NewJob("c1", "u1").CPU(60, 8).Node("c1").Obj())  // c1: 4 cores free
	h.MustSubmit(st.NewJob("c3", "u1").CPU(32, 8).Node("c3").Obj())  // c3: 32 cores free
	h.Cycle()
	h.MustSubmit(st.NewJob("two", "u1").GPU("A", 2).Obj())
	h.MustSubmit(st.NewJob("three", "u1").GPU("A", 3).Obj())
	h.MustSubmit(st.NewJob("cpu3", "u1").CPU(3, 8).Obj())
	h.MustSubmit(st.NewJob("cpu8", "u1").CPU(8, 8).Obj())
	h.Cycle()
	assert.Equal(t, []string{"g1"}, h.NodesOf("two"))
	assert.Equal(t, []string{"g3"}, h.NodesOf("three"))
	assert.Equal(t, []string{"c1"}, h.NodesOf("cpu3"))
	assert.Equal(t, []string{"c3"}, h.NodesOf("cpu8"))
	assert.Zero(t, h.UsedAccels("g2"))
}

func TestReviewClusterWithMostFreeGPUsIsTriedFirst(t *testing.T) {
	a, b := st.G8("a", "A"), st.G8("b", "A")
	a.Cluster, b.Cluster = "ca", "cb"
	h := st.New(t, a, b)
	h.Quota(rvU1, rvGPU("A", 16))
	h.MustSubmit(st.NewJob("fill", "u1").GPU("A", 4).Node("a").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("free", "u1").GPU("A", 2).Obj())
	pinned := st.NewJob("pinned", "u1").GPU("A", 2).Obj()
	pinned.Cluster = "ca"
	h.MustSubmit(pinned)
	h.Cycle()
	assert.Equal(t, []string{"b"}, h.NodesOf("free"), "cb has 8 free, ca 4: best fit alone would pick a")
	assert.Equal(t, []string{"a"}, h.NodesOf("pinned"))
}

// --- Schedule on hostile snapshots --------------------------------------

func rvSnapJSON(t *testing.T, s *sched.Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// rvScheduleChecked runs Schedule twice (pending list reversed the second
// time) and checks it does not panic, is deterministic, writes nothing to
// the snapshot, and that applying the plan breaks no capacity invariant.
func rvScheduleChecked(t *testing.T, snap *sched.Snapshot, pending []*structs.Job) *sched.Plan {
	t.Helper()
	before := rvSnapJSON(t, snap)
	in := sched.Input{Pending: pending, Now: rvT0.Add(time.Minute), Seed: 1}
	var p *sched.Plan
	require.NotPanics(t, func() { p = sched.Schedule(snap, in) })
	rev := slices.Clone(pending)
	slices.Reverse(rev)
	in.Pending = rev
	require.Equal(t, p, sched.Schedule(snap, in), "same snapshot, same plan, whatever the pending order")
	require.Equal(t, before, rvSnapJSON(t, snap), "Schedule wrote to the snapshot")
	after := *snap
	known := map[structs.NodeID]bool{}
	for _, n := range snap.Nodes {
		known[n.Name] = true
	}
	after.Tasks = slices.DeleteFunc(slices.Clone(snap.Tasks), func(tk *structs.Task) bool { return !known[tk.Node] })
	for _, pl := range p.Placements {
		for _, tp := range pl.Tasks {
			after.Tasks = append(after.Tasks, &structs.Task{ID: structs.MakeTaskID(pl.Job, tp.Index, 0), Job: pl.Job, Index: tp.Index,
				Node: tp.Node, Pool: tp.Pool, State: structs.TaskRunning, Resources: tp.Resources, Accels: tp.Accels})
		}
	}
	after.Jobs, after.Usage = nil, nil // capacity and accelerator invariants only
	require.NoError(t, sched.CheckInvariants(&after))
	return p
}

func rvJob(b *st.JobBuilder) *structs.Job {
	j := b.Obj()
	j.SubmitTime, j.PendingSince = rvT0, rvT0
	return j
}

func rvSnap(nodes []*structs.Node, jobs ...*structs.Job) *sched.Snapshot {
	s := &sched.Snapshot{Nodes: nodes, Jobs: map[structs.JobID]*structs.Job{},
		Quotas: map[structs.Scope]structs.ResourceList{}, Usage: map[structs.Scope]structs.ResourceList{}}
	for _, j := range jobs {
		s.Jobs[j.ID] = j
	}
	return s
}

func rvPlaced(p *sched.Plan) map[structs.JobID][]string {
	out := map[structs.JobID][]string{}
	for _, pl := range p.Placements {
		for _, tp := range pl.Tasks {
			out[pl.Job] = append(out[pl.Job], string(tp.Node))
		}
	}
	return out
}

func TestReviewScheduleSurvivesHostileSnapshots(t *testing.T) {
	low := func(id string) *st.JobBuilder { return st.NewJob(id, "u1").Low() }
	t.Run("empty cluster", func(t *testing.T) {
		j := rvJob(low("j").GPU("A", 1))
		p := rvScheduleChecked(t, rvSnap(nil, j), []*structs.Job{j})
		assert.Empty(t, p.Placements)
		require.NotNil(t, p.Pending["j"])
		assert.True(t, p.Pending["j"].NeverFits)
	})
	t.Run("nodes with zero capacity", func(t *testing.T) {
		g := st.GPUNode("g", "A", 8)
		g.Capacity.MilliCPU, g.Capacity.Memory = 0, 0
		jobs := []*structs.Job{rvJob(low("gpu").GPU("A", 1)), rvJob(low("cpu").CPU(1, 1))}
		p := rvScheduleChecked(t, rvSnap([]*structs.Node{g, st.CPUNode("c", 0, 0), {Name: "z"}}, jobs...), jobs)
		assert.Equal(t, []string{"g"}, rvPlaced(p)["gpu"], "a GPU node without CPU still lends its GPUs, with no CPU bound")
		assert.True(t, p.Pending["cpu"].NeverFits)
	})
	t.Run("quarantined accelerators and nodes that are not ready", func(t *testing.T) {
		q := st.G8("q", "A")
		for a := range 7 {
			q.Quarantined = append(q.Quarantined, structs.Quarantine{Accel: a})
		}
		var nodes []*structs.Node
		for _, s := range []structs.NodeState{structs.NodeNotReady, structs.NodeDraining, structs.NodeQuarantined, "exploded"} {
			n := st.G8(string(s), "A")
			n.State = s
			nodes = append(nodes, n)
		}
		one, two := rvJob(low("one").GPU("A", 1)), rvJob(low("two").GPU("A", 2))
		p := rvScheduleChecked(t, rvSnap(append(nodes, q), one, two), []*structs.Job{one, two})
		assert.Equal(t, map[structs.JobID][]string{"one": {"q"}}, rvPlaced(p))
		require.Len(t, p.Placements, 1)
		assert.Equal(t, []int{7}, p.Placements[0].Tasks[0].Accels.Indices(), "the only healthy accelerator")
		assert.Contains(t, p.Pending["two"].Message, "4 not ready")
	})
	t.Run("replicas 0, minAvailable above replicas, a gang bigger than the cluster", func(t *testing.T) {
		zero := rvJob(low("zero").GPU("A", 1).Replicas(0))
		svc := rvJob(low("svc").Service(2, 5).GPU("A", 1))
		huge := rvJob(low("huge").MPI(1000).GPU("A", 1))
		p := rvScheduleChecked(t, rvSnap([]*structs.Node{st.G8("n1", "A")}, zero, svc, huge), []*structs.Job{zero, svc, huge})
		assert.Len(t, rvPlaced(p)["svc"], 2, "minAvailable is capped at replicas")
		assert.Empty(t, rvPlaced(p)["huge"])
		assert.True(t, p.Pending["huge"].NeverFits)
	})
	t.Run("clusters and pins", func(t *testing.T) {
		a, b := st.G8("a", "A"), st.G8("b", "A")
		a.Cluster, b.Cluster = "ca", "cb"
		toB, nowhere := rvJob(low("to-b").GPU("A", 8)), rvJob(low("nowhere").GPU("A", 1))
		toB.Cluster, nowhere.Cluster = "cb", "cz"
		gang := rvJob(low("gang").MPI(2).GPU("A", 8))
		p := rvScheduleChecked(t, rvSnap([]*structs.Node{a, b}, toB, nowhere, gang), []*structs.Job{toB, nowhere, gang})
		assert.Equal(t, []string{"b"}, rvPlaced(p)["to-b"])
		assert.Empty(t, rvPlaced(p)["gang"], "one free node per cluster: a gang never spans clusters")
		assert.True(t, p.Pending["nowhere"].NeverFits)
	})
	t.Run("undeclared pool, tasks on unknown nodes, jobs missing from Snapshot.Jobs", func(t *testing.T) {
		ghost := st.G8("ghost", "A")
		ghost.Pool = "ghost"
		b := st.G8("b", "A")
		s := rvSnap([]*structs.Node{ghost, b})
		s.Tasks = []*structs.Task{
			{ID: "x-0", Job: "x", Node: "nowhere", State: structs.TaskRunning, Priority: structs.PriorityLow,
				Resources: structs.Resources{Accels: 8, AccelType: "A"}, Accels: 0xff},
			{ID: "y-0", Job: "y", Node: "b", State: structs.TaskRunning, Priority: structs.PriorityLow,
				Resources: structs.Resources{Accels: 4, AccelType: "A", MilliCPU: 48000, Memory: 384 * st.Gi}, Accels: 0x0f},
		}
		s.Reservations = []sched.Reservation{{Job: "gone", Node: "b", Resources: structs.Resources{Accels: 4}, Kind: sched.ReserveGang},
			{Job: "orphan", Node: "nowhere", Kind: sched.ReserveGang}}
		orphan := rvJob(low("orphan").GPU("A", 4)) // pending but not in Snapshot.Jobs
		big := rvJob(st.NewJob("big", "u1").GPU("A", 8))
		s.Jobs["big"] = big
		s.Quotas[rvU1] = rvGPU("A", 8)
		p := rvScheduleChecked(t, s, []*structs.Job{orphan, big})
		assert.Equal(t, []string{"b"}, rvPlaced(p)["orphan"], "the stale reservation of a job no longer pending is dropped")
		assert.Empty(t, rvPlaced(p)["big"])
		assert.Contains(t, p.Pending["big"].Message, "1 in pools this job may not use")
		assert.Empty(t, p.Preemptions, "a low task of an unknown job is not a victim")
	})
}

// Random clusters with several clusters, an undeclared pool, taints,
// edge devices, nodes changing state and accelerators quarantined, and
// random jobs (pins, selectors, tolerations, ladders, timeouts). On every
// cycle: invariants (harness), determinism, snapshot untouched, and the
// placement rules of the README.
func TestReviewHostileRandomStreamsKeepTheRules(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rvHostileStream(t, seed, 80)
		})
	}
}

func rvHostileStream(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 7))
	types := []string{"A", "B"}
	var nodes []*structs.Node
	for i := range 2 + r.IntN(8) {
		name := fmt.Sprintf("n%d", i)
		var n *structs.Node
		switch r.IntN(5) {
		case 0:
			n = st.CPUNode(name, int64(r.IntN(3)*16), 128)
		case 1:
			n = st.CPUNode(name, 8, 32)
			n.Capacity.Devices = map[string]int64{"jet": int64(1 + r.IntN(3))}
		default:
			n = st.GPUNode(name, types[r.IntN(2)], []int64{1, 2, 4, 8}[r.IntN(4)])
			if r.IntN(3) == 0 {
				n.MilliCPUPerAccel = 4000
			}
		}
		n.Cluster = structs.ClusterID([]string{"", "c2"}[r.IntN(2)])
		n.Pool = structs.PoolID([]string{"", "", "vision", "ghost"}[r.IntN(4)])
		if r.IntN(4) == 0 {
			n.Taints = append(n.Taints, st.Taint("maint", "true"))
		}
		if r.IntN(3) == 0 {
			n.Tags["fabric"] = "ib"
		}
		nodes = append(nodes, n)
	}
	h := st.New(t, nodes...)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u0", "u1"}, LendIdle: r.IntN(2) == 0})
	for u := range 3 {
		h.Quota(structs.UserScope(structs.UserID(fmt.Sprintf("u%d", u))), structs.ResourceList{
			"gpu/A": int64(r.IntN(24)), "gpu/B": int64(r.IntN(24)), "gpu": 8, "cpu": 64000, "memory": 256 * st.Gi, "device/jet": 4})
	}
	h.Quota(rvVision, structs.ResourceList{"gpu/A": 8, "gpu/B": 8, "cpu": 16000, "memory": 64 * st.Gi})
	tolerate := st.NewJob("x", "x").Tolerate("maint", "true").Obj().Tolerations
	next := 0
	for range steps {
		switch op := r.IntN(14); {
		case op < 6:
			next++
			b := st.NewJob(fmt.Sprintf("j%03d", next), fmt.Sprintf("u%d", r.IntN(3)))
			switch r.IntN(3) {
			case 0:
				b.Low()
			case 1:
				if r.IntN(2) == 0 {
					b.Project("vision").High()
				}
			}
			if r.IntN(3) == 0 {
				b.Project("vision")
			}
			switch r.IntN(6) {
			case 0:
				b.CPU(int64(1+r.IntN(16)), int64(1+r.IntN(32)))
			case 1:
				b.MPI(2+r.IntN(3)).GPU(types[r.IntN(2)], int64(1+r.IntN(8)))
				if r.IntN(2) == 0 {
					b.Spread()
				}
			case 2:
				n := 1 + r.IntN(4)
				b.Service(n, 1+r.IntN(n)).GPU("", 1)
			case 3:
				b.CPU(1, 1)
			default:
				b.GPU(types[r.IntN(2)], int64(1+r.IntN(8)))
				if r.IntN(3) == 0 {
					b.Fallback(1, types[r.IntN(2)], int64(1+r.IntN(4))).DowngradeAfter(time.Minute)
				}
			}
			j := b.Obj()
			if op == 5 {
				j.Resources = structs.Resources{MilliCPU: 1000, Memory: st.Gi, Devices: map[string]int64{"jet": 1}}
				j.Fallbacks = nil
			}
			if r.IntN(4) == 0 {
				j.Cluster = "c2"
			}
			if r.IntN(5) == 0 {
				j.NodeName = structs.NodeID(fmt.Sprintf("n%d", r.IntN(len(nodes))))
				j.Affinity.SpreadReplicas = false
			}
			if r.IntN(4) == 0 {
				j.Selector = "fabric=ib"
			}
			if r.IntN(3) == 0 {
				j.Tolerations = tolerate
			}
			if r.IntN(5) == 0 {
				j.PendingTimeout = structs.Duration(time.Duration(1+r.IntN(10)) * time.Minute)
			}
			_ = h.Submit(j)
		case op < 8:
			var running []string
			for id, j := range h.Snap.Jobs {
				if j.State == structs.JobRunning {
					running = append(running, string(id))
				}
			}
			if len(running) > 0 {
				slices.Sort(running)
				h.Finish(running[r.IntN(len(running))], structs.JobSucceeded)
			}
		case op < 9:
			h.Settle()
		case op < 10:
			n := nodes[r.IntN(len(nodes))]
			n.State = []structs.NodeState{structs.NodeReady, structs.NodeNotReady, structs.NodeDraining, structs.NodeQuarantined}[r.IntN(4)]
		case op < 11: // quarantine a free accelerator
			n := nodes[r.IntN(len(nodes))]
			if n.Capacity.Accels > 0 {
				var used structs.AccelMask
				for _, tk := range h.Snap.Tasks {
					if tk.Node == n.Name {
						used |= tk.Accels
					}
				}
				a := r.IntN(int(n.Capacity.Accels))
				if used&(1<<uint(a)) == 0 && n.QuarantinedMask()&(1<<uint(a)) == 0 {
					n.Quarantined = append(n.Quarantined, structs.Quarantine{Accel: a, Since: h.Now})
				}
			}
		case op < 12:
			n := nodes[r.IntN(len(nodes))]
			if _, ok := n.Tags["fabric"]; ok {
				delete(n.Tags, "fabric")
			} else {
				n.Tags["fabric"] = "ib"
			}
		default:
			h.Advance(time.Duration(r.IntN(300)) * time.Second)
		}
		before := rvSnapJSON(t, h.Snap)
		pending := h.Pending()
		a := sched.Schedule(h.Snap, sched.Input{Pending: pending, Now: h.Now})
		sh := slices.Clone(pending)
		r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		require.True(t, reflect.DeepEqual(a, sched.Schedule(h.Snap, sched.Input{Pending: sh, Now: h.Now})), "deterministic")
		require.Equal(t, before, rvSnapJSON(t, h.Snap), "snapshot untouched")

		p := h.Cycle()
		placed := map[structs.JobID]bool{}
		for _, pl := range p.Placements {
			placed[pl.Job] = true
			j := h.Job(string(pl.Job))
			clusters, pools := map[structs.ClusterID]bool{}, map[structs.PoolID]bool{}
			for _, tp := range pl.Tasks {
				n := h.Node(string(tp.Node))
				require.Equal(t, structs.NodeReady, n.State, "placed on a node that takes no new tasks")
				if j.Cluster != "" {
					require.Equal(t, j.Cluster, n.Cluster)
				}
				if j.NodeName != "" {
					require.Equal(t, j.NodeName, n.Name)
				}
				require.Zero(t, tp.Accels&n.QuarantinedMask(), "quarantined accelerator used")
				require.NotEqual(t, structs.PoolID("ghost"), n.Pool, "undeclared pools are never used")
				if j.Priority == structs.PriorityHigh {
					require.Equal(t, structs.PoolID("vision"), tp.Pool)
				}
				if tp.Resources.Accels == 0 && len(tp.Resources.Devices) == 0 {
					require.Zero(t, n.Capacity.Accels, "CPU-only replica on a GPU node")
				}
				clusters[n.Cluster], pools[tp.Pool] = true, true
			}
			if j.IsGang() {
				require.Len(t, pl.Tasks, j.ShapeAt(pl.Shape).Replicas)
				require.Len(t, clusters, 1, "a gang is in one cluster")
				require.Len(t, pools, 1, "a gang is in one pool")
			}
		}
		timedOut := map[structs.JobID]bool{}
		for _, to := range p.Timeouts {
			timedOut[to.Job] = true
		}
		for _, j := range pending {
			if placed[j.ID] || timedOut[j.ID] || p.Pending[j.ID] != nil {
				continue
			}
			stopping := slices.ContainsFunc(h.Snap.Tasks, func(tk *structs.Task) bool { return tk.Job == j.ID && tk.State == structs.TaskStopping })
			require.True(t, stopping, "job %s neither placed nor explained", j.ID)
		}
	}
}

// --- Spec parsers ---------------------------------------------------------

func TestReviewSpecErrorsNameTheFieldAsTheREADMEShows(t *testing.T) {
	_, err := structs.ParseJobSpec([]byte("kind: command\nname: x\nresources: {accelerators: {type: A100, count: 0.5}}\n"))
	assert.EqualError(t, err, "resources.accelerators.count 0.5 is not allowed: use a whole number")
	_, err = structs.ParseJobSpec([]byte("kind: command\nname: x\nreplica: 3\nresources: {cpu: 1}\n"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "replica is not a known field (did you mean replicas?): use kind, name, project, priority, "), err.Error())
}

func TestReviewSpecParsersRefuseHostileInputWithoutPanicOrHang(t *testing.T) {
	laughs := "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		laughs += n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = n
	}
	job := "kind: command\nname: x\nresources: {cpu: 1}\n"
	cases := []struct {
		name, doc, want string
	}{
		{"billion laughs", job + laughs, "excessive aliasing"},
		{"deep flow sequence", job + "args: " + strings.Repeat("[", 300000) + strings.Repeat("]", 300000), "max depth"},
		{"deep flow mapping", job + "labels: " + strings.Repeat("{a: ", 100000) + "1" + strings.Repeat("}", 100000), "max depth"},
		{"10 MB string", job + "image: " + strings.Repeat("a", 10<<20), "at most 1048576 are allowed"},
		{"NUL in name", "kind: command\nname: \"a\\0b\"\nresources: {cpu: 1}\n", `name "a\x00b" is not allowed`},
		{"escape sequence in env", job + "env: {X: \"\\e[31m\"}\n", `env["X"]`},
		{"invalid UTF-8", job + "image: \xff\xfe\n", "not valid UTF-8"},
		{"duplicate key", job + "kind: mpi\n", `key "kind" already set`},
		{"duplicate key in JSON", `{"kind":"command","name":"x","name":"y","resources":{"cpu":1}}`, `key "name" already set`},
		{"two documents", job + "---\nkind: mpi\n", "several YAML documents"},
		{"replicas overflow", job + "replicas: 99999999999999999999999\n", "replicas"},
		{"replicas above max", job + "replicas: 10001\n", "replicas 10001 is not allowed: use 1 to 10000"},
		{"cpu overflow", "kind: command\nname: x\nresources: {cpu: 1e999}\n", "resources.cpu"},
		{"memory times replicas overflows", "kind: command\nname: x\nreplicas: 10\nresources: {memory: 1Ei}\n", "resources.memory"},
		{"negative cpu", "kind: command\nname: x\nresources: {cpu: -1}\n", "resources.cpu"},
		{"NaN", "kind: command\nname: x\nresources: {cpu: .nan}\n", "resources.cpu"},
		{"array document", "[1, 2]", "array"},
		{"wrong case field", "Kind: command\nname: x\nresources: {cpu: 1}\n", "Kind is not a known field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = structs.ParseJobSpec([]byte(c.doc)) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Less(t, len(err.Error()), 2000, "error messages stay short")
		})
	}
	s, err := structs.ParseJobSpec([]byte(`{"kind":"command","name":"x","resources":{"cpu":"500m","memory":"1Gi"}}`))
	require.NoError(t, err, "JSON is accepted")
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	assert.Equal(t, structs.Resources{MilliCPU: 500, Memory: st.Gi}, j.Resources)

	for name, parse := range map[string]func([]byte) error{
		"cluster config": func(b []byte) error { _, err := structs.ParseClusterConfig(b); return err },
		"quota spec":     func(b []byte) error { _, err := structs.ParseQuotaSpec(b); return err },
	} {
		for _, doc := range []string{laughs, "nodes: " + strings.Repeat("[", 300000), strings.Repeat("x", 2<<20), "a: b\n---\nc: d\n", "{\"a\":1,\"a\":2}"} {
			var err error
			require.NotPanics(t, func() { err = parse([]byte(doc)) }, name)
			require.Error(t, err, name)
		}
	}
	_, err = structs.ParseClusterConfig([]byte("clusters: [{name: c1}]\nnodes: [{name: n1, cpu: 8, memory: 8Gi}, {name: n1, cpu: 8, memory: 8Gi}]\n"))
	assert.EqualError(t, err, `nodes[1].name "n1" is not allowed: node names must be unique`)
	_, err = structs.ParseClusterConfig([]byte("clusters: [{name: c1}]\nnodes: [{name: n1, pool: nope, cpu: 8, memory: 8Gi}]\n"))
	assert.ErrorContains(t, err, `nodes[0].pool "nope" is not allowed`)
	_, err = structs.ParseQuotaSpec([]byte("scope: user:u1\nlimits: {gpu/A: 1.5}\n"))
	assert.ErrorContains(t, err, `limits["gpu/A"] "1.5" is not allowed`)
	_, err = structs.ParseQuotaSpec([]byte("scope: user:u1\nlimits: {memory: 9Ei}\n"))
	assert.ErrorContains(t, err, `limits["memory"]`)
}
