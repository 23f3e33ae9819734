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

// warmLogged: clusters a (node a1) and b (node b1), each with a cache;
// only a's holds dataset d.
func warmLogged(t *testing.T) *logged {
	a1, b1 := st.C64("a1"), st.C64("b1")
	a1.Cluster, b1.Cluster = "a", "b"
	l := newLogged(t)
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "a", Backend: "local", Redis: "127.0.0.1:6379"}})
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "b", Backend: "local", Redis: "127.0.0.1:6380"}})
	l.must(&state.NodeUpsert{Node: a1})
	l.must(&state.NodeUpsert{Node: b1})
	return l
}

// cacheCycle schedules like the leader, with the caches' contents, and
// names the new tasks.
func (l *logged) cacheCycle(now time.Time, cache map[structs.ClusterID]map[string]bool) {
	l.t.Helper()
	snap := l.s.Snapshot()
	snap.Cache = cache
	p := sched.Schedule(snap, sched.Input{Pending: l.s.Pending(), Now: now})
	p.Pending = nil
	for i := range p.Placements {
		pl := &p.Placements[i]
		for k := range pl.Tasks {
			pl.Tasks[k].ID = structs.NewTaskID(pl.Job, pl.Tasks[k].Index, fmt.Sprintf("w%d", len(l.s.Tasks)+k))
		}
	}
	l.must(&state.PlanCommit{Plan: p, Now: now})
}

func dataJob(id string, b *st.JobBuilder) *structs.Job {
	j := job(id, b)
	j.Datasets, j.CacheMountPath = []string{"d"}, structs.DefaultCachePath
	return j
}

var bOnly = map[structs.ClusterID]map[string]bool{"a": {}, "b": {}}

// A job pinned to b, whose cache lacks d: its task waits (Warming) until
// the warm-up ends well, then may start; a report about an old attempt
// changes nothing.
func TestWarmUpHoldsTasksUntilDone(t *testing.T) {
	l := warmLogged(t)
	j := dataJob("w-1", st.NewJob("w", "u1").Low().CPU(1, 1))
	j.Cluster = "b"
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cacheCycle(t0, bOnly)
	tk := l.live("w-1")
	assert.True(t, l.s.Warming(tk))
	assert.Equal(t, []structs.WarmUp{{Cluster: "b", Datasets: []string{"d"}, Since: t0}}, l.s.Jobs["w-1"].WarmUps)
	l.must(&state.WarmUpEnd{Job: "w-1", Cluster: "b", Attempt: 7, Now: t0})
	assert.True(t, l.s.Warming(l.live("w-1")), "another attempt's report is ignored")
	l.must(&state.WarmUpEnd{Job: "w-1", Cluster: "b", Now: t0})
	assert.False(t, l.s.Warming(l.live("w-1")))
	assert.Nil(t, l.s.Jobs["w-1"].WarmUps)
	assert.Equal(t, structs.JobScheduled, l.s.Jobs["w-1"].State)
}

// A failed warm-up ends the waiting tasks (they never started) and
// restarts a restartPolicy OnFailure job as a new attempt, which fails for
// good after MaxRestarts; a Never job fails at once.
func TestWarmUpFailedRestartsOrFails(t *testing.T) {
	l := warmLogged(t)
	j := dataJob("r-1", st.NewJob("r", "u1").Low().CPU(1, 1))
	j.Cluster, j.RestartPolicy = "b", structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	for attempt := range state.MaxRestarts {
		l.cacheCycle(t0.Add(10*time.Minute), bOnly) // past the back-off
		tk := l.live("r-1")
		l.must(&state.WarmUpEnd{Job: "r-1", Cluster: "b", Attempt: attempt, Error: "dataset d is in no cluster's cache", Now: t0})
		assert.Equal(t, structs.TaskFailed, l.s.Tasks[tk.ID].State)
		assert.Equal(t, "never started: WarmUpFailed: cache warm-up of cluster b failed: dataset d is in no cluster's cache", l.s.Tasks[tk.ID].Message)
		r := l.s.Jobs["r-1"]
		require.Equal(t, structs.JobPending, r.State)
		assert.Equal(t, fmt.Sprintf("restart %d of 3: WarmUpFailed: cache warm-up of cluster b failed: dataset d is in no cluster's cache", attempt+1), r.Reason)
		assert.Equal(t, attempt+1, r.Attempt)
		assert.Nil(t, r.WarmUps)
	}
	l.cacheCycle(t0.Add(10*time.Minute), bOnly)
	l.must(&state.WarmUpEnd{Job: "r-1", Cluster: "b", Attempt: state.MaxRestarts, Error: "redis 127.0.0.1:1 unavailable", Now: t0})
	r := l.s.Jobs["r-1"]
	assert.Equal(t, structs.JobFailed, r.State)
	assert.Equal(t, "WarmUpFailed: cache warm-up of cluster b failed: redis 127.0.0.1:1 unavailable (no restarts left: 3 of 3 used)", r.Reason)

	n := dataJob("n-1", st.NewJob("n", "u1").Low().CPU(1, 1))
	n.Cluster = "b"
	l.must(&state.JobSubmit{Job: n, Now: t0})
	l.cacheCycle(t0, bOnly)
	l.must(&state.WarmUpEnd{Job: "n-1", Cluster: "b", Error: "copy d: broken pipe", Now: t0})
	assert.Equal(t, structs.JobFailed, l.s.Jobs["n-1"].State)
	assert.Equal(t, "WarmUpFailed: cache warm-up of cluster b failed: copy d: broken pipe", l.s.Jobs["n-1"].Reason)
}

// Cancelling a job during its warm-up ends its waiting tasks at once (no
// Stopping task waits for a process that never ran); a late WarmUpEnd
// changes nothing.
func TestWarmUpCancelled(t *testing.T) {
	l := warmLogged(t)
	j := dataJob("c-1", st.NewJob("c", "u1").Low().CPU(1, 1))
	j.Cluster = "b"
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cacheCycle(t0, bOnly)
	tk := l.live("c-1")
	l.must(&state.JobCancel{ID: "c-1", Now: t0})
	assert.Equal(t, structs.TaskStopped, l.s.Tasks[tk.ID].State, "stopped, not failed")
	assert.Equal(t, structs.StopCancelled, l.s.Tasks[tk.ID].StopReason)
	assert.Equal(t, "never started: the job ended while its cache was warmed", l.s.Tasks[tk.ID].Message)
	assert.Equal(t, structs.JobCancelled, l.s.Jobs["c-1"].State)
	before := l.json()
	l.must(&state.WarmUpEnd{Job: "c-1", Cluster: "b", Now: t0})
	assert.Equal(t, before, l.json())
}

// A cluster whose cache holds the data needs no warm-up.
func TestWarmUpNotNeededWhereCached(t *testing.T) {
	l := warmLogged(t)
	l.must(&state.JobSubmit{Job: dataJob("h-1", st.NewJob("h", "u1").Low().CPU(1, 1)), Now: t0})
	l.cacheCycle(t0, map[structs.ClusterID]map[string]bool{"a": {}, "b": {"d": true}})
	tk := l.live("h-1")
	assert.Equal(t, structs.NodeID("b1"), tk.Node)
	assert.False(t, l.s.Warming(tk))
	assert.Nil(t, l.s.Jobs["h-1"].WarmUps)
}

// A service's replicas placed on a cluster being warmed share its one
// warm-up; a failed warm-up ends them and the service stays, saying why,
// for the next cycle to place them again.
func TestWarmUpService(t *testing.T) {
	l := warmLogged(t)
	j := dataJob("s-1", st.NewJob("s", "u1").Low().Service(2, 1).CPU(1, 1))
	j.Cluster = "b"
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cacheCycle(t0, bOnly)
	var held []structs.TaskID
	for _, tk := range l.s.TasksOf("s-1") {
		assert.True(t, l.s.Warming(tk))
		held = append(held, tk.ID)
	}
	require.Len(t, held, 2)
	assert.Len(t, l.s.Jobs["s-1"].WarmUps, 1)
	l.must(&state.WarmUpEnd{Job: "s-1", Cluster: "b", Error: "copy d: EOF", Now: t0})
	for _, id := range held {
		assert.Equal(t, structs.TaskFailed, l.s.Tasks[id].State)
	}
	s := l.s.Jobs["s-1"]
	assert.False(t, s.State.Ended())
	assert.Equal(t, "WarmUpFailed: cache warm-up of cluster b failed: copy d: EOF", s.Reason)
	assert.Nil(t, s.WarmUps)
}

// A job that mounts the dataset cache is refused at submit when no
// cluster it may use has one, instead of waiting, holding its quota, until
// its pending timeout.
func TestCacheJobNeedsAClusterWithACache(t *testing.T) {
	a1, c1 := st.C64("a1"), st.C64("c1")
	a1.Cluster, c1.Cluster = "a", "c"
	l := newLogged(t)
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "a", Backend: "local", Redis: "127.0.0.1:6379"}})
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "c", Backend: "local"}})
	l.must(&state.NodeUpsert{Node: a1})
	l.must(&state.NodeUpsert{Node: c1})

	pinned := dataJob("p-1", st.NewJob("p", "u1").Low().CPU(1, 1))
	pinned.Cluster = "c"
	_, err := l.do(&state.JobSubmit{Job: pinned, Now: t0})
	require.ErrorIs(t, err, sched.ErrUnsatisfiable)
	assert.EqualError(t, err, "cache: no cluster this job may use has a dataset cache (cluster c has none: no redis in the cluster config), so it can never fit: "+
		"an admin gives a cluster its Redis (coordinator cluster get -o yaml c > c.yaml, add redis: HOST:PORT, coordinator cluster set -f c.yaml), or leave out cache")
	assert.Empty(t, l.s.Jobs, "nothing was made")

	anywhere := dataJob("a-1", st.NewJob("a", "u1").Low().CPU(1, 1))
	l.must(&state.JobSubmit{Job: anywhere, Now: t0}) // cluster a has one

	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "a", Backend: "local"}})
	_, err = l.do(&state.JobSubmit{Job: dataJob("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	assert.ErrorContains(t, err, "(clusters a, c have none: no redis in the cluster config)")
}
