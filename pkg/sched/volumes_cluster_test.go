package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// volumeClusters: kubernetes clusters a (one 8-GPU node, a1) and b (two,
// b1 and b2: the most free accelerators), and local cluster c (one
// 8-GPU node, c1). The claims each kubernetes cluster holds are given.
func volumeClusters(t *testing.T, claims map[structs.ClusterID]map[string]bool) *st.Harness {
	a1, b1, b2, c1 := st.G8("a1", "A"), st.G8("b1", "A"), st.G8("b2", "A"), st.G8("c1", "A")
	a1.Cluster, b1.Cluster, b2.Cluster, c1.Cluster = "a", "b", "b", "c"
	h := st.New(t, a1, b1, b2, c1)
	h.Quota(u1, structs.ResourceList{"gpu/A": 64})
	h.Snap.Volumes = claims
	return h
}

func volJob(b *st.JobBuilder, vols ...structs.Volume) *structs.Job {
	j := b.Obj()
	j.Volumes = vols
	return j
}

func rw(claim string) structs.Volume {
	return structs.Volume{Name: "v-" + claim, Claim: claim, MountPath: "/" + claim}
}

func ro(claim string) structs.Volume {
	v := rw(claim)
	v.ReadOnly = true
	return v
}

// A job goes only to a cluster that holds its volume's claim, although
// another has more free accelerators and a local one is empty; one whose
// claim no cluster holds waits, naming the volume and the clusters
// checked, as does one naming claims no one cluster holds together.
func TestVolumePinsJobToClusterWithClaim(t *testing.T) {
	h := volumeClusters(t, map[structs.ClusterID]map[string]bool{"a": {"imagenet": true}, "b": {"results": true}})
	h.MustSubmit(volJob(st.NewJob("train", "u1").GPU("A", 8), rw("imagenet")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("eval", "u1").GPU("A", 4), rw("results")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("lost", "u1").GPU("A", 1), rw("coco")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("both", "u1").GPU("A", 1), ro("imagenet"), ro("results")))
	h.Advance(1)
	pinned := volJob(st.NewJob("pinned", "u1").GPU("A", 1), ro("imagenet"))
	pinned.Cluster = "b"
	h.MustSubmit(pinned)
	h.Advance(1)
	local := volJob(st.NewJob("local", "u1").GPU("A", 1), ro("imagenet"))
	local.Cluster = "c"
	h.MustSubmit(local)
	h.Advance(1)
	h.MustSubmit(st.NewJob("plain", "u1").GPU("A", 8).Obj())
	h.Cycle()

	assert.Equal(t, []string{"a1"}, h.NodesOf("train"))
	assert.Equal(t, []string{"b1"}, h.NodesOf("eval"))
	assert.Empty(t, h.Tasks("lost"))
	assert.Equal(t, &sched.Why{Message: "waits for volume coco: no cluster has it (checked a, b); create it with coordinator volume create coco --size SIZE --cluster CLUSTER"}, h.Why("lost"))
	assert.Empty(t, h.Tasks("both"))
	assert.Equal(t, "waits for volumes imagenet, results: no one cluster with nodes has them all (imagenet in a; results in b); a job runs in one cluster", h.Why("both").Message)
	assert.Empty(t, h.Tasks("pinned"))
	assert.Equal(t, "waits for volume imagenet: no cluster has it (checked b); create it with coordinator volume create imagenet --size SIZE --cluster b", h.Why("pinned").Message)
	assert.Empty(t, h.Tasks("local"))
	assert.Equal(t, &sched.Why{NeverFits: true, Message: "waits for volume imagenet: cluster c is no kubernetes cluster, and a volume is a PersistentVolumeClaim in one (a, b)"}, h.Why("local"))
	assert.Equal(t, []string{"b2"}, h.NodesOf("plain"), "a job without volumes goes anywhere: b has the most free")

	// The claim made in b: the pinned job goes there.
	h.Snap.Volumes["b"]["imagenet"] = true
	h.Cycle()
	assert.Equal(t, []string{"b1"}, h.NodesOf("pinned"))
	assert.Empty(t, h.Tasks("both"))
	assert.Equal(t, "waits for volume results: job eval mounts it read-write (one job at a time)", h.Why("both").Message, "b holds both, and eval writes one")
}

// The same claim name in two clusters is two volumes: a writer in each.
// A third writer waits for both; when the cluster holding it is full, it
// says so and counts the nodes of the other clusters out.
func TestVolumeSameNameTwoClusters(t *testing.T) {
	h := volumeClusters(t, map[structs.ClusterID]map[string]bool{"a": {"data": true}, "b": {"data": true}})
	h.MustSubmit(volJob(st.NewJob("w1", "u1").GPU("A", 8), rw("data")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("w2", "u1").GPU("A", 4), rw("data")))
	h.Advance(1)
	h.MustSubmit(st.NewJob("fill", "u1").GPU("A", 1).Node("a1").Obj())
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("w3", "u1").GPU("A", 8), rw("data")))
	h.Cycle()
	assert.Equal(t, []string{"b1"}, h.NodesOf("w1"), "b has the most free")
	assert.Equal(t, []string{"a1"}, h.NodesOf("w2"), "b's data is w1's: a's is another volume")
	assert.Equal(t, []string{"a1"}, h.NodesOf("fill"))
	assert.Empty(t, h.Tasks("w3"))
	assert.Equal(t, "waits for volume data: job w2 mounts it read-write (one job at a time)", h.Why("w3").Message)

	// w2 ends, but a1 has 7 free: w3 may only use a (b's data is w1's).
	h.Finish("w2", structs.JobSucceeded)
	h.Cycle()
	assert.Empty(t, h.Tasks("w3"))
	assert.Equal(t, "does not fit now; 0/4 nodes fit: 3 in clusters without its volumes, or where another job mounts them, 1 without enough free resources now", h.Why("w3").Message)
	h.Finish("fill", structs.JobSucceeded)
	h.Cycle()
	assert.Equal(t, []string{"a1"}, h.NodesOf("w3"))
}

// A normal job waiting for a volume a low job writes preempts that job
// (and only it, when the room is there), then mounts it once it stopped;
// the low job then waits for the volume in turn.
func TestVolumeNormalPreemptsLowWriter(t *testing.T) {
	h := volumeClusters(t, map[structs.ClusterID]map[string]bool{"a": {"data": true}, "b": {"data": true}})
	low := volJob(st.NewJob("low", "u1").GPU("A", 2).Low(), rw("data"))
	low.Cluster = "a"
	h.MustSubmit(low)
	h.Advance(1)
	h.MustSubmit(st.NewJob("other", "u1").GPU("A", 2).Low().Node("a1").Obj())
	h.Cycle()
	require.Equal(t, []string{"a1"}, h.NodesOf("low"))
	require.Equal(t, []string{"a1"}, h.NodesOf("other"))

	norm := volJob(st.NewJob("norm", "u1").GPU("A", 4), rw("data"))
	norm.Cluster = "a"
	h.MustSubmit(norm)
	h.Cycle()
	assert.Equal(t, []string{"low"}, h.Victims(), "only the writer: a1 has room for norm")
	assert.Equal(t, "does not fit now; waiting for 1 preempted low-priority job(s) to stop: low", h.Why("norm").Message)
	// While it stops, nothing more is preempted and norm waits for it.
	h.Cycle()
	assert.Empty(t, h.Last.Preemptions)
	assert.Equal(t, "waits for volume data: job low mounts it read-write (one job at a time); it is being stopped (preempted)", h.Why("norm").Message)

	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"a1"}, h.NodesOf("norm"))
	assert.Empty(t, h.Tasks("low"))
	assert.Equal(t, "waits for volume data: job norm mounts it read-write (one job at a time)", h.Why("low").Message)
	assert.Equal(t, []string{"a1"}, h.NodesOf("other"), "untouched")
}

// When the writer's eviction alone leaves too little room, the fewest
// further low jobs go too; when even all low jobs would not make room,
// nothing is evicted.
func TestVolumePreemptionAddsFewestVictims(t *testing.T) {
	h := volumeClusters(t, map[structs.ClusterID]map[string]bool{"a": {"data": true}})
	h.MustSubmit(volJob(st.NewJob("writer", "u1").GPU("A", 2).Low(), rw("data")))
	h.Advance(1)
	h.MustSubmit(st.NewJob("small", "u1").GPU("A", 2).Low().Node("a1").Obj())
	h.Advance(1)
	h.MustSubmit(st.NewJob("big", "u1").GPU("A", 4).Low().Node("a1").Obj())
	h.Cycle()
	require.Equal(t, []string{"a1"}, h.NodesOf("writer"))

	// 8 GPUs: every low job on a1 goes, the writer first.
	h.MustSubmit(volJob(st.NewJob("all", "u1").GPU("A", 8), ro("data")))
	h.Cycle()
	assert.Equal(t, []string{"big", "small", "writer"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"a1"}, h.NodesOf("all"))
	h.Finish("all", structs.JobSucceeded)
	h.Cycle()
	require.Equal(t, []string{"a1"}, h.NodesOf("writer"))
	require.Equal(t, []string{"a1"}, h.NodesOf("small"))
	require.Equal(t, []string{"a1"}, h.NodesOf("big"))

	// 6 GPUs: the writer (2) and big (4) free exactly that: small stays.
	h.MustSubmit(volJob(st.NewJob("six", "u1").GPU("A", 6), rw("data")))
	h.Cycle()
	assert.Equal(t, []string{"big", "writer"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"a1"}, h.NodesOf("six"))
	assert.Equal(t, []string{"a1"}, h.NodesOf("small"))
	h.Finish("six", structs.JobSucceeded)
	h.Cycle()

	// 2 × 8 GPUs in a, which has one node: nothing is evicted.
	h.MustSubmit(volJob(st.NewJob("huge", "u1").MPI(2).GPU("A", 8), rw("data")))
	h.Cycle()
	assert.Empty(t, h.Last.Preemptions)
	assert.Equal(t, "waits for volume data: job writer mounts it read-write (one job at a time)", h.Why("huge").Message)
}

// Writers of equal or higher priority are never preempted for a volume,
// nor is anything preempted for a low job; a normal writer waiting for
// low readers evicts them all, but not while a normal job also reads.
func TestVolumePreemptsOnlyLow(t *testing.T) {
	h := volumeClusters(t, map[structs.ClusterID]map[string]bool{"a": {"data": true, "logs": true}, "b": {"data": true}})
	h.Pool(&structs.Pool{Name: "perception", Project: "perception", Members: []structs.UserID{"u1"}})
	h.Node("b2").Pool = "perception"
	inA := func(j *structs.Job) *structs.Job { j.Cluster = "a"; return j }
	h.MustSubmit(inA(volJob(st.NewJob("nw", "u1").GPU("A", 1), rw("data"))))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("hw", "u1").GPU("A", 1).High().Project("perception"), rw("data")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("lr1", "u1").GPU("A", 1).Low(), ro("logs")))
	h.Advance(1)
	h.MustSubmit(volJob(st.NewJob("lr2", "u1").GPU("A", 1).Low(), ro("logs")))
	h.Cycle()
	require.Equal(t, []string{"a1"}, h.NodesOf("nw"))
	require.Equal(t, []string{"b2"}, h.NodesOf("hw"))
	require.Equal(t, []string{"a1"}, h.NodesOf("lr1"))
	require.Equal(t, []string{"a1"}, h.NodesOf("lr2"))

	h.MustSubmit(inA(volJob(st.NewJob("n2", "u1").GPU("A", 1), rw("data"))))
	nb := volJob(st.NewJob("nb", "u1").GPU("A", 1), ro("data"))
	nb.Cluster = "b"
	h.MustSubmit(nb)
	h.MustSubmit(volJob(st.NewJob("lw", "u1").GPU("A", 1).Low(), rw("logs")))
	h.Cycle()
	assert.Empty(t, h.Last.Preemptions)
	assert.Equal(t, "waits for volume data: job nw mounts it read-write (one job at a time)", h.Why("n2").Message)
	assert.Equal(t, "waits for volume data: job hw mounts it read-write (one job at a time)", h.Why("nb").Message)
	assert.Equal(t, "waits for volume logs: job lr1 mounts it read-only, and a volume is written by one job while no other mounts it", h.Why("lw").Message)

	h.Finish("n2", structs.JobCancelled)
	h.Finish("nb", structs.JobCancelled)
	h.Finish("lw", structs.JobCancelled)
	h.MustSubmit(volJob(st.NewJob("nlog", "u1").GPU("A", 1), rw("logs")))
	h.Cycle()
	assert.Equal(t, []string{"lr1", "lr2"}, h.Victims())
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"a1"}, h.NodesOf("nlog"))

	// A normal reader among low ones: the writer waits, nobody goes.
	h.Finish("nlog", structs.JobSucceeded)
	h.Cycle()
	require.Len(t, h.Tasks("lr1"), 1)
	h.MustSubmit(volJob(st.NewJob("nread", "u1").GPU("A", 1), ro("logs")))
	h.Cycle()
	require.Len(t, h.Tasks("nread"), 1)
	h.MustSubmit(volJob(st.NewJob("nlog2", "u1").GPU("A", 1), rw("logs")))
	h.Cycle()
	assert.Empty(t, h.Last.Preemptions)
	assert.Empty(t, h.Tasks("nlog2"))
	assert.Equal(t, "waits for volume logs: job lr1 mounts it read-only, and a volume is written by one job while no other mounts it", h.Why("nlog2").Message)
}

// Without the leader's word on claims (no kubernetes cluster), a claim
// name is one volume everywhere, and a normal writer preempts a low one
// in any cluster.
func TestVolumeNoClaimsListPreemptsAnywhere(t *testing.T) {
	h := volumeClusters(t, nil)
	low := volJob(st.NewJob("low", "u1").GPU("A", 8).Low(), rw("data"))
	low.Cluster = "c"
	h.MustSubmit(low)
	h.Cycle()
	require.Equal(t, []string{"c1"}, h.NodesOf("low"))
	h.MustSubmit(volJob(st.NewJob("norm", "u1").GPU("A", 8), rw("data")))
	h.Cycle()
	assert.Equal(t, []string{"low"}, h.Victims())
	assert.Empty(t, h.Tasks("norm"))
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"b1"}, h.NodesOf("norm"), "room was reserved where b had the most free")
}

// CheckInvariants finds two writers of one claim in one cluster, and a
// reader beside a writer; writers of the same name in two clusters pass.
func TestVolumeInvariant(t *testing.T) {
	a1, b1 := st.G8("a1", "A"), st.G8("b1", "A")
	a1.Cluster, b1.Cluster = "a", "b"
	job := func(id string, v structs.Volume) *structs.Job {
		j := volJob(st.NewJob(id, "u1"), v)
		j.State = structs.JobRunning
		return j
	}
	task := func(id, node string) *structs.Task {
		return &structs.Task{ID: structs.TaskID(id + "-0"), Job: structs.JobID(id), Node: structs.NodeID(node), State: structs.TaskRunning}
	}
	snap := &sched.Snapshot{Nodes: []*structs.Node{a1, b1}, Jobs: map[structs.JobID]*structs.Job{
		"w1": job("w1", rw("data")), "w2": job("w2", rw("data")), "r1": job("r1", ro("data"))}}
	snap.Tasks = []*structs.Task{task("w1", "a1"), task("w2", "b1")}
	require.NoError(t, sched.CheckInvariants(snap))
	snap.Tasks = []*structs.Task{task("w1", "a1"), task("w2", "a1"), task("r1", "a1")}
	assert.EqualError(t, sched.CheckInvariants(snap), "volume data in cluster a: mounted read-write by jobs [w1 w2] and read-only by [r1] at once")
}
