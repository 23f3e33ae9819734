package sched_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

func TestRegression01FewestVictimsSingle(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(rvU1, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("big", "lu").Low().GPU("A", 4).Obj())
	h.Cycle()
	for i := range 4 {
		h.Advance(time.Minute)
		h.MustSubmit(st.NewJob(fmt.Sprint("s", i), "lu").Low().GPU("A", 1).Obj())
		h.Cycle()
	}
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 4).Obj())
	h.Cycle()
	assert.Equal(t, []string{"big"}, h.Victims())
}

func TestRegression02FewestVictimsGang(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"))
	h.Quota(rvU1, rvGPU("A", 16))
	for _, l := range []struct {
		id, node string
		n        int64
	}{{"l3", "n3", 8}, {"l2", "n2", 8}, {"l1a", "n1", 4}, {"l1b", "n1", 4}} {
		h.MustSubmit(st.NewJob(l.id, "lu").Low().GPU("A", l.n).Node(l.node).Obj())
		h.Cycle()
		h.Advance(time.Minute)
	}
	h.MustSubmit(st.NewJob("g", "u1").MPI(2).GPU("A", 8).Obj())
	h.Cycle()
	assert.Len(t, h.Victims(), 2)
}

func TestRegression03HugeCPUNode(t *testing.T) {
	h := st.New(t, st.CPUNode("big", 2000, 4000))
	h.Quota(rvU1, structs.ResourceList{"cpu": 2000000, "memory": 4000 * st.Gi})
	h.MustSubmit(st.NewJob("j", "u1").CPU(1100, 10).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("j"), 1)
}

func TestRegression04GangAcrossPoolsAdmitted(t *testing.T) {
	p1, p2 := st.G8("p1", "A"), st.G8("p2", "A")
	p1.Pool, p2.Pool = "vision", "vision"
	h := st.New(t, st.G8("n1", "A"), p1, p2)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}})
	h.Quota(rvVision, rvGPU("A", 24))
	err := h.Submit(st.NewJob("g", "u1").Project("vision").MPI(3).GPU("A", 8).Obj())
	assert.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.EqualError(t, err, "can never fit; gang needs 3 replicas: 2 fit now, at most 2 on empty nodes; a gang runs in one pool of one cluster")
	if err == nil {
		h.Cycle()
		t.Log(h.Why("g").Message)
	}
}

func TestRegression04bGangAcrossClustersAdmitted(t *testing.T) {
	a, b := st.G8("a1", "A"), st.G8("b1", "A")
	a.Cluster, b.Cluster = "ca", "cb"
	h := st.New(t, a, b)
	h.Quota(rvU1, rvGPU("A", 16))
	err := h.Submit(st.NewJob("g", "u1").MPI(2).GPU("A", 8).Obj())
	assert.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.EqualError(t, err, "can never fit; gang needs 2 replicas: 1 fit now, at most 1 on empty nodes; a gang runs in one pool of one cluster")
}

func TestRegression05GangReservationOnlyFirstCluster(t *testing.T) {
	var nodes []*structs.Node
	for i := range 6 {
		n := st.GPUNode(fmt.Sprint("a", i), "A", 2)
		n.Cluster = "ca"
		nodes = append(nodes, n)
	}
	b1, b2 := st.G8("b1", "A"), st.G8("b2", "A")
	b1.Cluster, b2.Cluster = "cb", "cb"
	h := st.New(t, append(nodes, b1, b2)...)
	h.Quota(rvU1, rvGPU("A", 64))
	h.MustSubmit(st.NewJob("x1", "u1").GPU("A", 4).Node("b1").Obj())
	h.MustSubmit(st.NewJob("x2", "u1").GPU("A", 4).Node("b2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("g", "u1").MPI(2).GPU("A", 8).Obj())
	p := h.Cycle()
	assert.NotEmpty(t, p.Reservations)
}

func TestRegression06PoolOnlyServicePartial(t *testing.T) {
	p1 := st.G8("p1", "A")
	p1.Pool = "vision"
	h := st.New(t, p1)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}})
	h.MustSubmit(st.NewJob("s", "u1").Project("vision").Service(4, 2).GPU("A", 4).Obj())
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 2)
}

func TestRegression07StalePreemptionReservation(t *testing.T) {
	p1 := st.G8("p1", "A")
	p1.Pool = "vision"
	h := st.New(t, p1, st.G8("n2", "A"))
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}, LendIdle: true})
	h.Quota(rvVision, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("l1", "lu").Low().GPU("A", 8).Node("p1").Obj())
	h.MustSubmit(st.NewJob("l2", "lu").Low().GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("n", "u1").Project("vision").GPU("A", 8).Obj())
	h.Cycle()
	h.Settle()
	h.MustSubmit(st.NewJob("hi", "u1").Project("vision").High().GPU("A", 8).Obj())
	for range 5 {
		h.Cycle()
		h.Settle() // victims stop
		h.Advance(time.Minute)
	}
	assert.Len(t, h.Tasks("n"), 1)
}

func TestRegression08DuplicatePending(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(rvU1, rvGPU("A", 8))
	h.MustSubmit(st.NewJob("j", "u1").GPU("A", 2).Obj())
	j := h.Job("j")
	p := sched.Schedule(h.Snap, sched.Input{Pending: []*structs.Job{j, j}, Now: h.Now})
	assert.Len(t, p.Placements, 1)
}

func TestRegression09NegativeReplicasPanics(t *testing.T) {
	j := st.NewJob("j", "u1").Low().GPU("A", 1).Replicas(-1).Obj()
	snap := &sched.Snapshot{Nodes: []*structs.Node{st.G8("n1", "A")}, Jobs: map[structs.JobID]*structs.Job{"j": j}}
	assert.NotPanics(t, func() { sched.Schedule(snap, sched.Input{Pending: []*structs.Job{j}, Now: time.Now()}) })
}

func TestRegression10DuplicateNodeNames(t *testing.T) {
	a, b := st.G8("n1", "A"), st.G8("n1", "A")
	snap := &sched.Snapshot{Nodes: []*structs.Node{a, b}, Jobs: map[structs.JobID]*structs.Job{}}
	snap.Tasks = []*structs.Task{{ID: "x", Job: "x", Node: "n1", State: structs.TaskRunning, Resources: structs.Resources{Accels: 8, AccelType: "A"}, Accels: 0xff}}
	j := st.NewJob("j", "u1").Low().GPU("A", 8).Obj()
	j.SubmitTime = rvT0
	p := sched.Schedule(snap, sched.Input{Pending: []*structs.Job{j}, Now: rvT0})
	assert.Empty(t, p.Placements)
}

func TestRegression13ScaleDownOnFallbackShape(t *testing.T) {
	j := st.NewJob("s", "u1").Service(2, 1).GPU("A", 4).Fallback(4, "A", 2).Obj()
	j.Shape = 1
	var live []*structs.Task
	for i := range 4 {
		live = append(live, &structs.Task{ID: structs.MakeTaskID("s", i, 0), Job: "s", Index: i, State: structs.TaskRunning, Healthy: true})
	}
	p, err := sched.ScaleDown(j, live, 3)
	require.NoError(t, err)
	assert.Len(t, p.Stop, 1)
}

func TestRegression14ScaleDownStoppingTaskCounted(t *testing.T) {
	j := st.NewJob("s", "u1").Service(3, 1).CPU(1, 1).Obj()
	var live []*structs.Task
	for i := range 3 {
		live = append(live, &structs.Task{ID: structs.MakeTaskID("s", i, 1), Job: "s", Index: i, State: structs.TaskRunning, Healthy: true, StartedAt: rvT0.Add(time.Duration(i) * time.Minute)})
	}
	live = append(live, &structs.Task{ID: "s-0-a0", Job: "s", State: structs.TaskStopping})
	p, _ := sched.ScaleDown(j, live, 2)
	assert.Equal(t, []structs.TaskID{"s-2-a1"}, p.Stop)
}

func TestRegression15QuarantineDuplicates(t *testing.T) {
	n := st.G8("n1", "A")
	n.Quarantined = []structs.Quarantine{{Accel: 3}, {Accel: 3}}
	h := st.New(t, n)
	h.Quota(rvU1, rvGPU("A", 8))
	assert.NoError(t, h.Submit(st.NewJob("j", "u1").GPU("A", 7).Obj()))
}

func TestRegression16QuotaOverflow(t *testing.T) {
	n := st.CPUNode("c", 64, 1)
	n.Capacity.Memory = 7 << 60
	h := st.New(t, n)
	h.Quota(rvU1, structs.ResourceList{"cpu": 1 << 62, "memory": 1<<63 - 2})
	a := st.NewJob("a", "u1").CPU(1, 1).Obj()
	a.Resources.Memory = 6 << 60
	h.MustSubmit(a)
	b := st.NewJob("b", "u1").CPU(1, 1).Obj()
	b.Resources.Memory = 6 << 60
	_, err := sched.Admit(h.Snap, b)
	assert.ErrorIs(t, err, sched.ErrQuotaExceeded)
}

// Why-pending: nodes where a replica fits now are counted (the counts add up
// to the nodes considered) and facts that are not node counts are notes.
func TestRegression17WhyCountsAddUp(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
	h.Quota(rvU1, rvGPU("A", 16))
	h.MustSubmit(st.NewJob("pin", "u1").GPU("A", 1).Node("n2").Obj())
	h.Snap.Nodes = h.Snap.Nodes[:1] // n2 goes away before the job starts
	h.Cycle()
	why := h.Why("pin")
	require.NotNil(t, why)
	assert.Equal(t, "can never fit; 0/1 nodes fit: 1 not node n2; node n2 does not exist", why.Message)
	assert.Equal(t, []sched.Count{{Reason: "not node n2", Nodes: 1}}, why.Filtered)
	assert.Equal(t, []string{"node n2 does not exist"}, why.Notes)

	h2 := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"))
	h2.Quota(rvU1, rvGPU("A", 24))
	h2.Quota(rvU2, rvGPU("A", 8))
	h2.MustSubmit(st.NewJob("hog", "u2").GPU("A", 8).Node("n3").Obj())
	h2.Cycle()
	h2.MustSubmit(st.NewJob("g", "u1").MPI(3).GPU("A", 8).Obj())
	h2.Cycle()
	why = h2.Why("g")
	require.NotNil(t, why)
	assert.Equal(t, "does not fit now; gang needs 3 replicas: 2 fit now, at most 3 on empty nodes; 2/3 nodes fit: 1 without enough free resources now", why.Message)
	assert.Equal(t, 2, why.Fit)
	assert.Empty(t, why.Notes)
}
