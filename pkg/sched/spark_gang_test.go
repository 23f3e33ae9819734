package sched_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// execRes is what each executor of gangJob's jobs holds: 4 cores,
// 8 GiB + 1 GiB overhead.
var execRes = structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}

var driverRes = structs.Resources{MilliCPU: 2000, Memory: 4 * st.Gi}

// gangJob is a spark job of u1 (normal unless b says) with a 2-core,
// 4 GiB driver and executors of 4 cores, 8 GiB + 1 GiB: with dynamic
// allocation from min (also its initial executors) to most.
func gangJob(b *st.JobBuilder, min, most int) *structs.Job {
	j := b.Kind(structs.KindSpark).CPU(2, 4).Obj()
	j.Spark = &structs.Spark{MainApplicationFile: "local:///a.py",
		Executor:          structs.SparkExecutor{Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi},
		DynamicAllocation: &structs.SparkDynamicAllocation{MinExecutors: min, InitialExecutors: min, MaxExecutors: most}}
	return j
}

func spark(id string, min, most int) *structs.Job { return gangJob(st.NewJob(id, "u1"), min, most) }

// sparkHarness is nodes with a large quota for u1.
func sparkHarness(t *testing.T, nodes ...*structs.Node) *st.Harness {
	h := st.New(t, nodes...)
	h.Quota("user:u1", structs.ResourceList{structs.KeyCPU: 1000000, structs.KeyMemory: 10000 * st.Gi, "gpu/A": 100})
	return h
}

// heldNodes lists the nodes of the room held for job id's executors.
func heldNodes(h *st.Harness, id string) []string {
	var out []string
	for _, r := range h.Held(id) {
		out = append(out, string(r.Node))
	}
	return out
}

// noLoneDriver checks that every running spark job has its minimum
// executors bound or their room held (executors here end with their job).
func noLoneDriver(t *testing.T, h *st.Harness) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(h.Snap.Jobs)) {
		j := h.Snap.Jobs[id]
		if j.Spark != nil && j.State == structs.JobRunning {
			m := j.Spark.MinExecutors()
			assert.Equal(t, m, len(h.Held(string(id)))+min(len(h.Executors(string(id))), m),
				"spark job %s runs its driver: its minimum executors are bound or held", id)
		}
	}
}

// The driver goes with its minimum executors, in one decision: the room
// for them is held on nodes the executors may use, and the charge is
// unchanged; a driver that would fit alone waits when its executors do
// not fit with it, saying so.
func TestSparkGang(t *testing.T) {
	h := sparkHarness(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 8, 64))
	h.MustSubmit(spark("s", 2, 3))
	p := h.Cycle()
	require.Len(t, p.Placements, 1)
	pl := p.Placements[0]
	assert.Equal(t, []sched.TaskPlacement{{Index: 0, Node: "n2", Pool: structs.PublicPool, Resources: driverRes}}, pl.Tasks)
	assert.Equal(t, []sched.Reservation{
		{Job: "s", Node: "n2", Resources: execRes, Kind: sched.ReserveMinExecutors},
		{Job: "s", Node: "n1", Resources: execRes, Kind: sched.ReserveMinExecutors},
	}, pl.Held, "best fit: beside the driver on n2, then n1")
	assert.Equal(t, []sched.Reservation{
		{Job: "s", Node: "n2", Resources: execRes, Kind: sched.ReserveMinExecutors, Made: 1},
		{Job: "s", Node: "n1", Resources: execRes, Kind: sched.ReserveMinExecutors, Made: 1},
	}, h.Snap.Reservations)
	assert.Equal(t, structs.ResourceList{structs.KeyCPU: 2000 + 3*4000, structs.KeyMemory: 4*st.Gi + 3*9*st.Gi}, h.Snap.Usage["user:u1"],
		"charged as at submit: the driver and its most executors")

	// t's driver would fit alone (2 cores are left on n2), its 4
	// executors do not fit beside it: nothing of it starts.
	h.MustSubmit(spark("t", 4, 4))
	p = h.Cycle()
	assert.Empty(t, p.Placements)
	assert.Empty(t, h.Tasks("t"))
	why := h.Why("t")
	require.NotNil(t, why)
	assert.False(t, why.NeverFits)
	assert.Equal(t, "does not fit now; driver + 4 executors need cpu=2 memory=4Gi + 4 × cpu=4 memory=9Gi at once, in one pool of one cluster: "+
		"3 executors fit now, at most 4 on empty nodes; for executors 1/2 nodes fit: 1 reserved for job s", why.Message)
	assert.Equal(t, &sched.SparkShortfall{Executors: 4, Driver: driverRes, Executor: execRes, Fit: 3, MaxFit: 4, Nodes: 2, NodesFit: 1,
		Filtered: []sched.Count{{Reason: "reserved for job s", Nodes: 1}}}, why.Spark)
	assert.Nil(t, why.Gang, "one replica: the executors are the gang")
	assert.Equal(t, []sched.Reservation{
		{Job: "s", Node: "n2", Resources: execRes, Kind: sched.ReserveMinExecutors, Made: 1},
		{Job: "s", Node: "n1", Resources: execRes, Kind: sched.ReserveMinExecutors, Made: 1},
	}, h.Snap.Reservations, "kept while s runs; t reserves nothing over them")

	// Executors that can never fit with it (a nodeSelector no node
	// matches): the driver can never start.
	u := spark("u", 1, 1)
	u.Spark.Executor.NodeSelector = map[string]string{"disk": "ssd"}
	h.MustSubmit(u)
	h.Cycle()
	assert.Empty(t, h.Tasks("u"))
	why = h.Why("u")
	assert.True(t, why.NeverFits)
	assert.Equal(t, "can never fit; driver + 1 executor need cpu=2 memory=4Gi + 1 × cpu=4 memory=9Gi at once, in one pool of one cluster: "+
		"0 executors fit now, at most 0 on empty nodes; for executors 0/2 nodes fit: 2 not matching selector disk=ssd", why.Message)
}

// How many executors come with the driver: dynamicAllocation.minExecutors
// (0: the driver alone; initialExecutors above it are best-effort), else
// executor.instances, all of them. On a cluster that runs no executors
// (Spark in local mode) the driver goes alone.
func TestSparkGangSize(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(j *structs.Job)
		held int
	}{
		{"min 2", func(*structs.Job) {}, 2},
		{"min 0", func(j *structs.Job) {
			j.Spark.DynamicAllocation.MinExecutors, j.Spark.DynamicAllocation.InitialExecutors = 0, 0
		}, 0},
		{"min 1, initial 3", func(j *structs.Job) {
			j.Spark.DynamicAllocation.MinExecutors, j.Spark.DynamicAllocation.InitialExecutors = 1, 3
		}, 1},
		{"3 instances", func(j *structs.Job) { j.Spark.DynamicAllocation, j.Spark.Executor.Instances = nil, 3 }, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sparkHarness(t, st.C64("n1"))
			j := spark("s", 2, 4)
			c.edit(j)
			h.MustSubmit(j)
			p := h.Cycle()
			require.Len(t, p.Placements, 1)
			assert.Len(t, p.Placements[0].Held, c.held)
			if c.held > 0 {
				assert.Equal(t, slices.Repeat([]string{"n1"}, c.held), heldNodes(h, "s"))
			} else {
				assert.Nil(t, p.Placements[0].Held)
				assert.Empty(t, h.Snap.Reservations)
			}
		})
	}
	h := sparkHarness(t, st.CPUNode("n1", 4, 64))
	h.Node("n1").Cluster = "laptop"
	h.Snap.NoExecutors = map[structs.ClusterID]bool{"laptop": true}
	h.MustSubmit(spark("s", 2, 4))
	p := h.Cycle()
	require.Len(t, p.Placements, 1, "a 4-core node holds the driver, not 2 executors: local mode runs none")
	assert.Nil(t, p.Placements[0].Held)
}

// Executors asking GPUs go to nodes of their GPU type, beside a CPU
// driver, as one gang: their room holds the CPU and memory bound to their
// GPUs; their Pods bind there.
func TestSparkGangGPUExecutors(t *testing.T) {
	h := sparkHarness(t, st.C64("c1"), st.GPUNode("g1", "B", 4), st.GPUNode("g2", "A", 2))
	j := spark("s", 2, 2)
	j.Spark.Executor.GPU = &structs.SparkGPU{Type: "A", Amount: 1, Vendor: "nvidia.com", DiscoveryScript: "/x"}
	h.MustSubmit(j)
	p := h.Cycle()
	require.Len(t, p.Placements, 1)
	gpu := structs.Resources{MilliCPU: 12000, Memory: 96 * st.Gi, AccelType: "A", Accels: 1}
	assert.Equal(t, []sched.TaskPlacement{{Index: 0, Node: "c1", Pool: structs.PublicPool, Resources: driverRes}}, p.Placements[0].Tasks)
	assert.Equal(t, []sched.Reservation{
		{Job: "s", Node: "g2", Resources: gpu, Kind: sched.ReserveMinExecutors},
		{Job: "s", Node: "g2", Resources: gpu, Kind: sched.ReserveMinExecutors},
	}, p.Placements[0].Held)

	// A GPU job of type A finds g2 held.
	h.MustSubmit(st.NewJob("g", "u1").GPU("A", 1).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("g"))
	assert.Contains(t, h.Why("g").Message, "1 reserved for job s")
	for i := 1; i <= 2; i++ {
		tp, err := h.BindExecutor("s", fmt.Sprintf("s-exec-%d", i))
		require.NoError(t, err)
		assert.Equal(t, structs.NodeID("g2"), tp.Node)
		assert.Equal(t, gpu, tp.Resources)
	}
	assert.Empty(t, h.Held("s"))
	assert.Equal(t, 2, h.UsedAccels("g2"))
}

// The room held for a job's executors is nobody else's: no job of any
// priority is placed in it, a normal job does not preempt to get it, and
// low jobs use only what is left; it becomes the executors' as they bind,
// and everyone's when the job ends.
func TestSparkHeldRoomNotTaken(t *testing.T) {
	h := sparkHarness(t, st.CPUNode("n1", 16, 64))
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}, LendIdle: true})
	h.MustSubmit(spark("s", 2, 3))
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("s"))
	require.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s"))

	// 6 cores are free beside the driver and the room: x (8) waits,
	// preempting nothing, and low z (6) runs there.
	h.MustSubmit(st.NewJob("x", "u1").CPU(8, 8).Obj())
	h.MustSubmit(st.NewJob("z", "u1").Low().CPU(6, 8).Obj())
	p := h.Cycle()
	assert.Empty(t, p.Preemptions)
	assert.Empty(t, h.Tasks("x"))
	assert.Equal(t, []string{"n1"}, h.NodesOf("z"))
	assert.Equal(t, "does not fit now; 0/1 nodes fit: 1 reserved for job s", h.Why("x").Message)
	// A second spark job's executor may not take it either (below).
	// The executors bind into it: x still waits, now for them.
	tp, err := h.BindExecutor("s", "s-exec-1")
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "n1", Pool: structs.PublicPool, Resources: execRes}, tp)
	assert.Equal(t, []string{"n1"}, heldNodes(h, "s"))
	_, err = h.BindExecutor("s", "s-exec-2")
	require.NoError(t, err)
	assert.Empty(t, h.Held("s"), "its minimum executors have bound: nothing is held")
	_, err = h.BindExecutor("s", "s-exec-3")
	require.ErrorIs(t, err, sched.ErrNoRoom, "a third (beyond its minimum) finds no room")
	h.Cycle()
	assert.Empty(t, h.Tasks("x"))
	assert.Equal(t, "does not fit now; 0/1 nodes fit: 1 without enough free resources now", h.Why("x").Message)
	// s ends: x runs.
	h.Finish("s", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("x"))

	// A high job (in a project pool lent to the public) finds the room
	// of a low spark job's executors held too; only by preempting the
	// whole job does it get it (TestSparkPreemptionFreesAll).
	v := st.CPUNode("v1", 16, 64)
	v.Pool = "vision"
	h = sparkHarness(t, v)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}, LendIdle: true})
	h.MustSubmit(gangJob(st.NewJob("s", "u1").High().Project("vision"), 2, 2))
	h.Cycle()
	require.Equal(t, []string{"v1", "v1"}, heldNodes(h, "s"))
	h.MustSubmit(gangJob(st.NewJob("t", "u1").High().Project("vision"), 0, 2))
	h.Cycle()
	require.Equal(t, []string{"v1"}, h.NodesOf("t"))
	// t's executor (4 cores) finds 4 free beside two drivers and s's
	// room; a second does not: it is s's.
	_, err = h.BindExecutor("t", "t-exec-1")
	require.NoError(t, err)
	_, err = h.BindExecutor("t", "t-exec-2")
	require.ErrorIs(t, err, sched.ErrNoRoom)
	assert.Equal(t, []string{"v1", "v1"}, heldNodes(h, "s"))
}

// An executor Pod binds into the room held for its job first, where best
// fit would have put it elsewhere; one whose Pod does not allow that
// node binds elsewhere and still counts: the job's last held room goes.
func TestSparkExecutorsBindIntoHeldRoom(t *testing.T) {
	n2 := st.CPUNode("n2", 8, 64)
	n2.Tags["disk"] = "ssd"
	h := sparkHarness(t, st.CPUNode("n1", 16, 64), n2)
	h.MustSubmit(st.NewJob("f", "u1").Low().CPU(8, 8).Node("n2").Obj())
	h.Cycle()
	h.MustSubmit(spark("s", 3, 4))
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("s"))
	require.Equal(t, []string{"n1", "n1", "n1"}, heldNodes(h, "s"))
	h.Finish("f", structs.JobSucceeded) // n2 is empty: best fit for 4 cores

	tp, err := h.BindExecutor("s", "s-exec-1")
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("n1"), tp.Node, "its held room, not n2")
	assert.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s"))
	// One that asks for disk=ssd binds on n2: one room on n1 goes.
	tp, err = h.BindExecutorPod("s", sched.ExecutorPod{Name: "s-exec-2", Requests: execRes, NodeSelector: map[string]string{"disk": "ssd"}})
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("n2"), tp.Node)
	assert.Equal(t, []string{"n1"}, heldNodes(h, "s"))
	// A smaller Pod takes a whole room.
	tp, err = h.BindExecutorPod("s", sched.ExecutorPod{Name: "s-exec-3", Requests: structs.Resources{MilliCPU: 1000, Memory: st.Gi}})
	require.NoError(t, err)
	assert.Equal(t, sched.TaskPlacement{Index: -1, Node: "n1", Pool: structs.PublicPool, Resources: structs.Resources{MilliCPU: 1000, Memory: st.Gi}}, tp)
	assert.Empty(t, h.Held("s"))
	// Beyond its minimum: best fit over what is free (n1: 16-2-4-1 = 9,
	// n2: 8-4 = 4).
	tp, err = h.BindExecutor("s", "s-exec-4")
	require.NoError(t, err)
	assert.Equal(t, structs.NodeID("n2"), tp.Node)
	assert.Equal(t, []string{"n1", "n2", "n1", "n2"}, h.Executors("s"))
	h.Cycle()
	noLoneDriver(t, h)
}

// Five spark jobs (a driver of 2 cores and at least 2 executors of 4)
// on two 12-core nodes, where two fit with their executors: the first
// two start, the others wait whole, though a driver alone would fit
// (the Spark Operator deadlock: every driver holds its room while all
// executors wait). As jobs end the next one starts, in order, never in
// the room held for executors that bind late; all five finish.
func TestSparkFiveJobsTwoFit(t *testing.T) {
	h := sparkHarness(t, st.CPUNode("n1", 12, 64), st.CPUNode("n2", 12, 64))
	ids := []string{"s1", "s2", "s3", "s4", "s5"}
	for _, id := range ids {
		h.MustSubmit(spark(id, 2, 4))
	}
	var started, finished []string
	// cycle runs one cycle; the job it starts (if any) has its driver on
	// node and the room for its 2 executors on held.
	cycle := func(job, node string, held ...string) {
		t.Helper()
		p := h.Cycle()
		var got []string
		for _, pl := range p.Placements {
			got = append(got, string(pl.Job))
			started = append(started, string(pl.Job))
		}
		if job == "" {
			assert.Empty(t, got)
		} else {
			assert.Equal(t, []string{job}, got)
			assert.Equal(t, []string{node}, h.NodesOf(job), "job %s's driver", job)
			assert.Equal(t, held, heldNodes(h, job), "job %s's executors' room", job)
		}
		noLoneDriver(t, h)
		for _, id := range ids {
			if j := h.Job(id); j.State == structs.JobPending {
				assert.Empty(t, h.Tasks(id), "job %s waits whole", id)
				assert.Contains(t, h.Why(id).Message, "does not fit now; driver + 2 executors need cpu=2 memory=4Gi + 2 × cpu=4 memory=9Gi at once, in one pool of one cluster: ")
			}
		}
	}
	// bind binds job id's two executors, into its held room.
	bind := func(id string) {
		t.Helper()
		for i := 1; i <= 2; i++ {
			want := h.Held(id)[0].Node
			tp, err := h.BindExecutor(id, fmt.Sprintf("%s-exec-%d", id, i))
			require.NoError(t, err)
			assert.Equal(t, want, tp.Node, "job %s's executor binds into its room", id)
		}
		assert.Empty(t, h.Held(id))
	}
	finish := func(id string) {
		t.Helper()
		h.Finish(id, structs.JobSucceeded)
		finished = append(finished, id)
	}

	p := h.Cycle()
	require.Len(t, p.Placements, 2)
	started = []string{"s1", "s2"}
	assert.Equal(t, []string{"n1"}, h.NodesOf("s1"))
	assert.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s1"))
	assert.Equal(t, []string{"n1"}, h.NodesOf("s2"), "best fit: the 2 cores left on n1")
	assert.Equal(t, []string{"n2", "n2"}, heldNodes(h, "s2"))
	// s3 could run its driver on n2 (4 cores are free beside s2's
	// room), not its executors.
	assert.Equal(t, "does not fit now; driver + 2 executors need cpu=2 memory=4Gi + 2 × cpu=4 memory=9Gi at once, in one pool of one cluster: "+
		"1 executor fits now, at most 2 on empty nodes; for executors 1/2 nodes fit: 1 without enough free resources now; "+
		"for the driver 1/2 nodes fit: 1 without enough free resources now", h.Why("s3").Message)
	for _, id := range []string{"s3", "s4", "s5"} {
		assert.Equal(t, structs.JobPending, h.Job(id).State)
		assert.Empty(t, h.Tasks(id))
	}
	noLoneDriver(t, h)

	bind("s1")
	cycle("", "")
	finish("s1")
	cycle("s3", "n1", "n1", "n1")
	bind("s2") // late, into the room s3 did not take
	bind("s3")
	cycle("", "")
	finish("s2")
	cycle("s4", "n1", "n2", "n2")
	bind("s4")
	finish("s3")
	cycle("s5", "n2", "n1", "n1")
	bind("s5")
	cycle("", "")
	finish("s4")
	finish("s5")
	cycle("", "")
	assert.Equal(t, ids, started)
	assert.Equal(t, ids, finished)
	for _, id := range ids {
		assert.Equal(t, structs.JobSucceeded, h.Job(id).State)
	}
	assert.Empty(t, h.Snap.Tasks)
	assert.Empty(t, h.Snap.Reservations)
	assert.Empty(t, h.Snap.Usage["user:u1"])
}

// A low spark job is preempted whole: its driver, its executors and the
// room held for the rest of its minimum go together, even when its only
// stake in the node wanted is that room.
func TestSparkPreemptionFreesAll(t *testing.T) {
	h := sparkHarness(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 16, 64))
	h.MustSubmit(gangJob(st.NewJob("l", "u2").Low(), 2, 2))
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("l"))
	_, err := h.BindExecutor("l", "l-exec-1")
	require.NoError(t, err)
	require.Equal(t, []string{"n1"}, heldNodes(h, "l"))
	lt := h.Tasks("l")
	require.Len(t, lt, 2)

	// n (normal, the whole of n1) preempts l: its driver and executor
	// stop, its held room goes; the room is n's.
	h.MustSubmit(st.NewJob("n", "u1").CPU(16, 64).Node("n1").Obj())
	p := h.Cycle()
	assert.Equal(t, []sched.Preemption{{Victim: "l", Preemptor: "n", Tasks: []structs.TaskID{lt[0].ID, lt[1].ID}}}, p.Preemptions)
	assert.Equal(t, []sched.Reservation{{Job: "n", Node: "n1", Resources: structs.Resources{MilliCPU: 16000, Memory: 64 * st.Gi}, Kind: sched.ReservePreemption}},
		p.Reservations, "l's held room is gone with it")
	assert.Empty(t, h.Held("l"))
	h.Settle()
	assert.Equal(t, structs.JobPending, h.Job("l").State)
	assert.Equal(t, 1, h.Job("l").Attempt)
	p = h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("n"))
	// l comes back whole on n2, with its room.
	assert.Equal(t, []string{"n2"}, h.NodesOf("l"))
	assert.Equal(t, []string{"n2", "n2"}, heldNodes(h, "l"))
	assert.Len(t, p.Placements, 2)

	// l2's driver runs on n2 and its room is all on n1: m, which needs
	// the whole of n1, preempts l2 for it.
	h = sparkHarness(t, st.CPUNode("n1", 16, 64), st.CPUNode("n2", 4, 64))
	h.MustSubmit(gangJob(st.NewJob("l2", "u2").Low().Node("n2"), 3, 3))
	h.Cycle()
	require.Equal(t, []string{"n2"}, h.NodesOf("l2"))
	require.Equal(t, []string{"n1", "n1", "n1"}, heldNodes(h, "l2"))
	h.MustSubmit(st.NewJob("m", "u1").CPU(16, 64).Node("n1").Obj())
	p = h.Cycle()
	assert.Equal(t, []sched.Preemption{{Victim: "l2", Preemptor: "m", Tasks: []structs.TaskID{h.Tasks("l2")[0].ID}}}, p.Preemptions)
	assert.Empty(t, h.Held("l2"))
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("m"))
	assert.Empty(t, h.Tasks("l2"), "l2 waits whole: its executors have no room with it")
	assert.Contains(t, h.Why("l2").Message, "driver + 3 executors need")

	// A normal spark job's room is no victim: n waits.
	h = sparkHarness(t, st.CPUNode("n1", 16, 64))
	h.MustSubmit(spark("s", 2, 2))
	h.Cycle()
	h.MustSubmit(st.NewJob("n", "u1").CPU(16, 64).Obj())
	p = h.Cycle()
	assert.Empty(t, p.Preemptions)
	assert.Empty(t, h.Tasks("n"))
	assert.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s"))
}

// A normal spark job preempts low work to make room for its driver and
// its minimum executors together, and the freed room is reserved for all
// of them until they are placed.
func TestSparkPreemptsForGang(t *testing.T) {
	h := sparkHarness(t, st.CPUNode("n1", 16, 64))
	h.MustSubmit(st.NewJob("a", "u2").Low().CPU(12, 8).Obj())
	h.Cycle()
	require.Equal(t, []string{"n1"}, h.NodesOf("a"))
	h.MustSubmit(spark("s", 2, 3))
	p := h.Cycle()
	assert.Equal(t, []sched.Preemption{{Victim: "a", Preemptor: "s", Tasks: []structs.TaskID{"a-0-a0"}}}, p.Preemptions,
		"the driver alone (2 cores) would fit beside a: its executors do not")
	assert.Equal(t, []sched.Reservation{
		{Job: "s", Node: "n1", Resources: driverRes, Kind: sched.ReservePreemption},
		{Job: "s", Node: "n1", Resources: execRes, Kind: sched.ReservePreemption},
		{Job: "s", Node: "n1", Resources: execRes, Kind: sched.ReservePreemption},
	}, p.Reservations)
	assert.Empty(t, h.Tasks("s"))
	h.Settle()
	p = h.Cycle()
	require.Len(t, p.Placements, 1)
	assert.Equal(t, structs.JobID("s"), p.Placements[0].Job)
	assert.Equal(t, []string{"n1"}, h.NodesOf("s"))
	assert.Equal(t, []string{"n1", "n1"}, heldNodes(h, "s"))
	assert.Empty(t, h.Tasks("a"), "a (12 cores) waits: 6 are left beside s and its room")
	noLoneDriver(t, h)
}
