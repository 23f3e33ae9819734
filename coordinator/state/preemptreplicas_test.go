package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A low service losing 2 of its 4 replicas (started together: those of
// the first node) to a normal job: only they
// stop, the service runs on (not requeued, no preemption counted), both
// jobs record it, and once stopped and the preemptor gone the two are
// placed again as new tasks.
func TestServicePreemptedReplicaByReplica(t *testing.T) {
	l := newLogged(t, st.GPUNode("n1", "A", 2), st.GPUNode("n2", "A", 2))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 2}}})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u9").Low().Service(4, 1).GPU("A", 1)), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	l.must(&state.JobSubmit{Job: job("n-1", st.NewJob("n", "u1").GPU("A", 2)), Now: t0.Add(time.Minute)})
	p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: t0.Add(time.Minute)})
	require.Len(t, p.Preemptions, 1)
	require.True(t, p.Preemptions[0].Replicas)
	p.Pending = nil
	l.must(&state.PlanCommit{Plan: p, Now: t0.Add(time.Minute)})

	s := l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State)
	assert.Equal(t, "replicas 0, 1 preempted by n-1; placed again once stopped, where there is room", s.Reason)
	assert.Equal(t, map[structs.TaskState]int{structs.TaskRunning: 2, structs.TaskStopping: 2}, l.tasksIn("s-1"))
	evs := l.events("s-1")
	assert.Equal(t, "+60 Preempted: preempted by n-1: stopping replicas 0, 1 on n1, freeing cpu=24 memory=192Gi gpu/A=2, 120 GPU-seconds of its work lost unless it checkpointed", evs[len(evs)-1])
	evn := l.events("n-1")
	assert.Equal(t, "+60 Preempting: preempting replicas 0, 1 of low-priority service s-1 on n1 to make room: freeing cpu=24 memory=192Gi gpu/A=2, 120 GPU-seconds of its work lost unless it checkpointed", evn[len(evn)-1])

	now := t0.Add(time.Minute + time.Second)
	var stopping []structs.TaskEvent
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.State == structs.TaskStopping {
			stopping = append(stopping, structs.TaskEvent{Task: tk.ID, State: structs.TaskFailed, ExitCode: 143, Time: now})
		}
	}
	l.must(&state.TaskUpdate{Events: stopping})
	s = l.s.Jobs["s-1"]
	assert.Equal(t, structs.JobRunning, s.State, "not requeued")
	assert.Zero(t, s.Attempt)
	assert.Zero(t, s.Preemptions)
	assert.Zero(t, s.ReplicaRestarts, "a preempted replica did not exit on its own")

	l.recycle(now)
	assert.Equal(t, []string{"n1"}, nodesOf(l, "n-1"))
	assert.Equal(t, map[structs.TaskState]int{structs.TaskRunning: 2, structs.TaskStopped: 2}, l.tasksIn("s-1"), "the replacements wait")
	l.report(now, structs.TaskSucceeded, 0, "n-1")
	l.recycle(now)
	assert.Equal(t, map[structs.TaskState]int{structs.TaskRunning: 2, structs.TaskScheduled: 2, structs.TaskStopped: 2}, l.tasksIn("s-1"), "placed again")
}

func nodesOf(l *logged, id structs.JobID) []string {
	var out []string
	for _, tk := range l.s.TasksOf(id) {
		if tk.State.HoldsResources() {
			out = append(out, string(tk.Node))
		}
	}
	return out
}

// The public pool has one setting, its minimum runtime: kept while set,
// dropped when set without it; nothing else of it may be set.
func TestPublicPoolMinRuntime(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(10 * time.Minute)}})
	require.Len(t, l.s.Snapshot().Pools, 1)
	assert.Equal(t, structs.Duration(10*time.Minute), l.s.Snapshot().Pools[0].MinRuntime)
	_, err := l.do(&state.PoolUpsert{Pool: &structs.Pool{Name: structs.PublicPool, LendIdle: true}})
	assert.EqualError(t, err, "pool public: the public pool sets only minRuntime")
	_, err = l.do(&state.PoolRemove{Name: structs.PublicPool})
	assert.EqualError(t, err, "the public pool is never deleted: set it without minRuntime to drop its settings")
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: structs.PublicPool}})
	assert.Empty(t, l.s.Pools, "as before it was ever set")
}

// A pool that still has nodes is not deleted, and the refusal names every
// node to move, not only one.
func TestPoolRemoveNamesEveryNode(t *testing.T) {
	a, b := st.G8("a1", "A"), st.G8("a2", "A")
	a.Pool, b.Pool = "vision", "vision"
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: "vision", Project: "vision"}})
	l.must(&state.NodeUpsert{Node: b})
	l.must(&state.NodeUpsert{Node: a})
	_, err := l.do(&state.PoolRemove{Name: "vision"})
	assert.EqualError(t, err, "pool vision still has 2 nodes, a1, a2: move them to other pools first")
	assert.NotNil(t, l.s.Pools["vision"])
}
