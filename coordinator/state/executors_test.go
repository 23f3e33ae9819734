package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// sparkJob is a spark job S: a 2-CPU 4 GiB driver and 4 executors of 4 cores
// and 8 GiB plus 1 GiB overhead.
func sparkJob(id string, b *st.JobBuilder) *structs.Job {
	j := job(id, b.Kind(structs.KindSpark).CPU(2, 4))
	j.Spark = &structs.Spark{MainApplicationFile: "local:///opt/spark/jobs/clean.py", ServiceAccount: "spark",
		Executor: structs.SparkExecutor{Instances: 4, Cores: 4, Memory: 8 * st.Gi, MemoryOverhead: st.Gi}}
	return j
}

// driverOf is job id's live driver task.
func (l *logged) driverOf(id structs.JobID) *structs.Task {
	j := l.s.Jobs[id]
	for _, t := range l.s.TasksOf(id) {
		if t.Index == 0 && t.Attempt == j.Attempt && t.Executor == "" {
			return t
		}
	}
	return nil
}

// executor places one executor Pod of job id asking for the job's
// executor as the leader does.
func (l *logged) executor(id structs.JobID, pod string, now time.Time) (structs.TaskID, error) {
	l.t.Helper()
	return l.executorAsking(id, pod, l.s.Jobs[id].Spark.ExecutorResources(), now)
}

// executorAsking places one executor Pod of job id asking for req.
func (l *logged) executorAsking(id structs.JobID, pod string, req structs.Resources, now time.Time) (structs.TaskID, error) {
	l.t.Helper()
	j, d := l.s.Jobs[id], l.driverOf(id)
	require.NotNil(l.t, d)
	tp, err := sched.PlaceExecutor(l.s.Snapshot(), j, d, sched.ExecutorPod{Requests: req})
	if err != nil {
		return "", err
	}
	res, err := l.do(&state.ExecutorAdd{Job: id, Driver: d.ID, Pod: pod, Node: tp.Node, Pool: tp.Pool,
		Requests: &req, Resources: tp.Resources, Accels: tp.Accels, Token: "tok-" + pod, Now: now})
	if err != nil {
		return "", err
	}
	return res.(structs.TaskID), nil
}

func TestSparkExecutors(t *testing.T) {
	l := newLogged(t, st.C64("c1"), st.C64("c2"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{structs.KeyCPU: 40000, structs.KeyMemory: 100 * st.Gi}}})
	l.must(&state.JobSubmit{Job: sparkJob("s-1", st.NewJob("s", "u1")), Now: t0})
	// Charged at submit for the driver and its most executors: 2 + 4 × 4
	// cores, 4 + 4 × (8 + 1) GiB.
	want := structs.ResourceList{structs.KeyCPU: 18000, structs.KeyMemory: 40 * st.Gi}
	assert.Equal(t, want, l.s.Usage["user:u1"])
	_, err := l.do(&state.ExecutorAdd{Job: "s-1", Driver: "s-1-0-a0", Pod: "s-exec-0", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "job s-1 is Pending: only a started job gets executors")

	l.cycle(t0)
	assert.Equal(t, want, l.s.Usage["user:u1"], "placing the driver keeps the charge")
	l.report(t0, structs.TaskRunning, 0, "s-1")
	require.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)
	for i, pod := range []string{"s-exec-1", "s-exec-2", "s-exec-3", "s-exec-4"} {
		id, err := l.executor("s-1", pod, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, structs.MakeTaskID("s-1", i+1, 0), id)
		x := l.s.Tasks[id]
		assert.Equal(t, pod, x.Executor)
		assert.Equal(t, structs.NodeID("c1"), x.Node, "best fit: the driver's node has the fewest free cores")
		assert.Equal(t, structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, x.Resources)
		assert.Equal(t, structs.TaskScheduled, x.State)
	}
	assert.Equal(t, want, l.s.Usage["user:u1"], "executors are within the job's charge")
	_, err = l.executor("s-1", "s-exec-5", t0)
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "job s-1 already runs 4 executors, its most")
	_, err = l.executor("s-1", "s-exec-2", t0)
	require.ErrorIs(t, err, state.ErrExists)

	// An executor that ends is Spark's business: the job runs on, and
	// Spark may ask for another in its place.
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{
		{Task: "s-1-1-a0", State: structs.TaskRunning, Time: t0},
		{Task: "s-1-2-a0", State: structs.TaskFailed, ExitCode: 1, Time: t0},
	}})
	assert.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State)
	id, err := l.executor("s-1", "s-exec-5", t0)
	require.NoError(t, err)
	assert.Equal(t, structs.TaskID("s-1-5-a0"), id)

	// The driver ends: the job fails, its executors are stopped and its
	// charge released; once they end nothing is held.
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: l.driverOf("s-1").ID, State: structs.TaskFailed, ExitCode: 137, Time: t0}}})
	assert.Equal(t, structs.JobFailed, l.s.Jobs["s-1"].State)
	assert.Empty(t, l.s.Usage["user:u1"])
	stopping := 0
	for _, x := range l.s.TasksOf("s-1") {
		if x.Executor != "" && x.State == structs.TaskStopping {
			stopping++
			assert.Equal(t, structs.StopJobEnded, x.StopReason)
		}
	}
	assert.Equal(t, 4, stopping)
	_, err = l.executor("s-1", "s-exec-6", t0)
	require.Error(t, err)
	l.report(t0, structs.TaskFailed, 137, "s-1")
	assert.Empty(t, l.s.Snapshot().Tasks)
}

// A restarted job gets fresh executors: it is requeued only once its
// old executors have stopped, and the old driver gets no more.
func TestSparkExecutorsRestart(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	j := sparkJob("s-1", st.NewJob("s", "u1"))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{structs.KeyCPU: 18000, structs.KeyMemory: 40 * st.Gi}}})
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	old := l.driverOf("s-1")
	for _, pod := range []string{"a", "b"} {
		_, err := l.executor("s-1", pod, t0)
		require.NoError(t, err)
	}
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: old.ID, State: structs.TaskFailed, ExitCode: 1, Time: t0}}})
	assert.Equal(t, structs.JobRunning, l.s.Jobs["s-1"].State, "restarting: waits for its executors to stop")
	assert.Equal(t, 0, l.s.Jobs["s-1"].Attempt)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "s-1-1-a0", State: structs.TaskFailed, ExitCode: 143, Time: t0}}})
	assert.Equal(t, 0, l.s.Jobs["s-1"].Attempt)
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "s-1-2-a0", State: structs.TaskFailed, ExitCode: 143, Time: t0}}})
	require.Equal(t, structs.JobPending, l.s.Jobs["s-1"].State)
	assert.Equal(t, 1, l.s.Jobs["s-1"].Attempt)
	_, err := l.do(&state.ExecutorAdd{Job: "s-1", Driver: old.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid, "a pending job gets no executor")
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	_, err = l.do(&state.ExecutorAdd{Job: "s-1", Driver: old.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "is not the live driver of job s-1's attempt 2")
	id, err := l.executor("s-1", "c", t0)
	require.NoError(t, err)
	assert.Equal(t, structs.TaskID("s-1-1-a1"), id)
}

// An executor that would not fit is refused and changes nothing; a plain
// job gets no executors.
func TestSparkExecutorRefusals(t *testing.T) {
	l := newLogged(t, st.CPUNode("c1", 12, 64))
	l.must(&state.JobSubmit{Job: sparkJob("s-1", st.NewJob("s", "u1").Low()), Now: t0})
	l.must(&state.JobSubmit{Job: job("p-1", st.NewJob("p", "u1").Low().CPU(1, 1)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1", "p-1")
	for _, pod := range []string{"a", "b"} {
		_, err := l.executor("s-1", pod, t0)
		require.NoError(t, err)
	}
	// 2 + 1 + 2 × 4 cores used: a third executor does not fit now.
	_, err := l.executor("s-1", "c", t0)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	d := l.driverOf("s-1")
	_, err = l.do(&state.ExecutorAdd{Job: "s-1", Driver: d.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 4000, Memory: 9 * st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrNoRoom)
	_, err = l.do(&state.ExecutorAdd{Job: "s-1", Driver: d.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 1000, Memory: st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "resources cpu=1 memory=1Gi (0 accelerators held) are not what it asks for (cpu=4 memory=9Gi)")
	big := structs.Resources{MilliCPU: 5000, Memory: 9 * st.Gi}
	_, err = l.do(&state.ExecutorAdd{Job: "s-1", Driver: d.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Requests: &big, Resources: big, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "executor pod c asks for cpu=5 memory=9Gi: more than job s-1's executor (cpu=4 memory=9Gi), which its quota was charged for")
	p := l.driverOf("p-1")
	_, err = l.do(&state.ExecutorAdd{Job: "p-1", Driver: p.ID, Pod: "c", Node: "c1", Pool: structs.PublicPool,
		Resources: structs.Resources{MilliCPU: 1000}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "job p-1 is of kind command: only spark jobs have executors")
	assert.Len(t, l.s.TasksOf("s-1"), 3)
}

// An executor Pod asking less than its job's executor is held at what it
// asks: more executors fit on a node, the job's charge is unchanged.
func TestSparkExecutorAsksLess(t *testing.T) {
	l := newLogged(t, st.CPUNode("c1", 13, 64))
	l.must(&state.JobSubmit{Job: sparkJob("s-1", st.NewJob("s", "u1").Low()), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	// 13 cores, 2 for the driver: two 4-core executors fit, not a third;
	// two of 1 core and 3 GiB fit beside them.
	for _, pod := range []string{"a", "b"} {
		_, err := l.executor("s-1", pod, t0)
		require.NoError(t, err)
	}
	small := structs.Resources{MilliCPU: 1000, Memory: 3 * st.Gi}
	_, err := l.executor("s-1", "c", t0)
	require.ErrorIs(t, err, sched.ErrNoRoom)
	// Held at less than it asks: refused.
	d := l.driverOf("s-1")
	_, err = l.do(&state.ExecutorAdd{Job: "s-1", Driver: d.ID, Pod: "x", Node: "c1", Pool: structs.PublicPool,
		Requests: &small, Resources: structs.Resources{MilliCPU: 1000, Memory: 2 * st.Gi}, Token: "t", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.ErrorContains(t, err, "resources cpu=1 memory=2Gi (0 accelerators held) are not what it asks for (cpu=1 memory=3Gi)")
	for _, pod := range []string{"c", "d"} {
		id, err := l.executorAsking("s-1", pod, small, t0)
		require.NoError(t, err)
		assert.Equal(t, small, l.s.Tasks[id].Resources)
	}
	_, err = l.executorAsking("s-1", "e", small, t0)
	require.ErrorIs(t, err, state.ErrInvalid, "four executors are its most")
	assert.ErrorContains(t, err, "already runs 4 executors")
}

// A spark job whose executor no node could ever hold is refused at
// submit, saying so, and nothing is charged; the driver alone fitting is
// not enough. Every node counts, whatever its cluster's backend (local
// mode runs executors in the driver, but the executor is still what the
// job is charged for).
func TestSparkExecutorLargerThanAnyNode(t *testing.T) {
	l := newLogged(t, st.C64("c1"), st.G8("g1", "A100"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{
		structs.KeyCPU: 10_000_000, structs.KeyMemory: 100_000 * st.Gi, "gpu/A100": 1000}}})
	cases := []struct {
		name string
		edit func(*structs.SparkExecutor)
		want string
	}{
		{"more cores than any node", func(e *structs.SparkExecutor) { e.Cores = 65 },
			"spark.executor asks for cpu=65 memory=9Gi per executor (memory with its overhead), more than any node could hold: can never fit; 0/2 nodes fit: 1 too small for one replica (cpu=65 memory=9Gi), 1 with accelerators (CPU-only jobs run on CPU nodes)"},
		{"more memory than any node", func(e *structs.SparkExecutor) { e.Memory = 300 * st.Gi },
			"spark.executor asks for cpu=4 memory=301Gi per executor (memory with its overhead), more than any node could hold: can never fit; 0/2 nodes fit: 1 too small for one replica (cpu=4 memory=301Gi)"},
		{"more GPUs than any node", func(e *structs.SparkExecutor) {
			e.Cores = 1
			e.GPU = &structs.SparkGPU{Type: "A100", Amount: 9, Vendor: "nvidia.com", DiscoveryScript: "/g.sh"}
		}, "spark.executor asks for cpu=1 memory=9Gi gpu/A100=9 per executor (memory with its overhead), more than any node could hold: can never fit; 0/2 nodes fit: 1 too small for one replica (cpu=1 memory=9Gi gpu/A100=9)"},
		{"a GPU type no node has", func(e *structs.SparkExecutor) {
			e.GPU = &structs.SparkGPU{Type: "H100", Amount: 1, Vendor: "nvidia.com", DiscoveryScript: "/g.sh"}
		}, `spark.executor asks for cpu=4 memory=9Gi gpu/H100=1 per executor (memory with its overhead), more than any node could hold: unknown accelerator type "H100": this cluster has A100`},
	}
	for i, tc := range cases {
		j := sparkJob(fmt.Sprintf("s-%d", i), st.NewJob(fmt.Sprintf("s%d", i), "u1"))
		tc.edit(&j.Spark.Executor)
		_, err := l.do(&state.JobSubmit{Job: j, Now: t0})
		require.ErrorIs(t, err, sched.ErrUnsatisfiable, "%s: %v", tc.name, err)
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.Nil(t, l.s.Jobs[j.ID], "%s: not accepted", tc.name)
		assert.Empty(t, l.s.Usage["user:u1"], "%s: nothing charged", tc.name)
	}
	// The largest executor a node holds is accepted.
	j := sparkJob("s-ok", st.NewJob("ok", "u1"))
	j.Spark.Executor.Cores, j.Spark.Executor.Memory = 64, 255*st.Gi
	l.must(&state.JobSubmit{Job: j, Now: t0})
	assert.NotNil(t, l.s.Jobs["s-ok"])
}
