package state_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// logged applies commands through Encode/Decode, as the FSM does, keeps
// the log, and checks the invariants after every command.
type logged struct {
	t   *testing.T
	s   *state.State
	log [][]byte
	seq int // task IDs made by recycle
	// Every task and job ever seen (their last version): fair-share
	// usage is checked against the usage recomputed from them.
	tasks map[structs.TaskID]*structs.Task
	jobs  map[structs.JobID]*structs.Job
}

func newLogged(t *testing.T, nodes ...*structs.Node) *logged {
	l := &logged{t: t, s: state.New(), tasks: map[structs.TaskID]*structs.Task{}, jobs: map[structs.JobID]*structs.Job{}}
	for _, n := range nodes {
		l.must(&state.NodeUpsert{Node: n})
	}
	return l
}

func (l *logged) do(c state.Command) (any, error) {
	l.t.Helper()
	b, err := state.Encode(c)
	require.NoError(l.t, err)
	l.log = append(l.log, b)
	d, err := state.Decode(b)
	require.NoError(l.t, err)
	res, err := l.s.Apply(uint64(len(l.log)), d)
	require.NoError(l.t, l.s.CheckInvariants(), "after %T", c)
	l.checkUsage(c)
	l.checkCycle(c)
	return res, err
}

// checkCycle checks the leader's one read of a cycle against the state
// read plainly: the snapshot, the pending jobs, the Scheduled and
// Stopping allocations with their tokens, jobs and warm-up holds, the
// current warm-ups and the clusters' caches.
func (l *logged) checkCycle(c state.Command) {
	l.t.Helper()
	s := l.s
	cy := state.ReadCycle(func(fn func(*state.State)) { fn(s) })
	require.Equal(l.t, s.Pending(), cy.Pending, "after %T", c)
	var allocs []state.Alloc
	for _, id := range slices.Sorted(maps.Keys(s.Tasks)) {
		t := s.Tasks[id]
		if t.State != structs.TaskScheduled && t.State != structs.TaskStopping {
			continue
		}
		a := state.Alloc{Task: t, Job: s.Jobs[t.Job], Token: s.Tokens[id], Warming: s.Warming(t)}
		if n := s.Nodes[t.Node]; n != nil {
			a.Cluster = s.Clusters[n.Cluster]
		}
		if j := a.Job; t.State == structs.TaskScheduled && j != nil && j.IsGang() {
			a.GangWhole = true
			for _, x := range s.Tasks {
				if x.Job == t.Job && x.Attempt == t.Attempt && x.Executor == "" {
					a.Gang = append(a.Gang, x.ID)
					a.GangWhole = a.GangWhole && (x.State == structs.TaskScheduled || x.State == structs.TaskRunning)
				}
			}
		}
		allocs = append(allocs, a)
	}
	require.Len(l.t, cy.Allocs, len(allocs), "after %T", c)
	for i, a := range allocs {
		got := cy.Allocs[i]
		assert.ElementsMatch(l.t, a.Gang, got.Gang, "%s's gang after %T", a.Task.ID, c)
		a.Gang, got.Gang = nil, nil
		require.Equal(l.t, a, got, "after %T", c)
	}
	var warm []state.JobWarmUp
	for _, id := range slices.Sorted(maps.Keys(s.Jobs)) {
		if j := s.Jobs[id]; !j.State.Ended() {
			for _, w := range j.WarmUps {
				if w.Attempt == j.Attempt {
					warm = append(warm, state.JobWarmUp{Job: id, WarmUp: w})
				}
			}
		}
	}
	require.Equal(l.t, warm, cy.WarmUps, "after %T", c)
	redis := map[structs.ClusterID]string{}
	for id, cl := range s.Clusters {
		redis[id] = cl.Redis
	}
	require.Equal(l.t, redis, cy.Redis, "after %T", c)
	require.Equal(l.t, s.Index, cy.Snap.Index)
	require.Len(l.t, cy.Snap.Tasks, len(slices.DeleteFunc(slices.Collect(maps.Values(s.Tasks)), func(t *structs.Task) bool { return !t.State.HoldsResources() })))
}

// checkUsage checks fair-share usage against the usage recomputed from
// every task seen so far.
func (l *logged) checkUsage(c state.Command) {
	l.t.Helper()
	maps.Copy(l.tasks, l.s.Tasks)
	maps.Copy(l.jobs, l.s.Jobs)
	u := l.s.FairUsage
	want := sched.RecomputeUsage(l.s.FairShare, u.Since, u.At, slices.Collect(maps.Values(l.tasks)),
		func(id structs.JobID) *structs.Job { return l.jobs[id] },
		func(id structs.PoolID) structs.ProjectID {
			if p := l.s.Pools[id]; p != nil {
				return p.Project
			}
			return ""
		})
	require.NoError(l.t, sched.CheckUsage(u, want), "after %T", c)
}

func (l *logged) must(c state.Command) any {
	l.t.Helper()
	res, err := l.do(c)
	require.NoError(l.t, err)
	return res
}

// cycle schedules the pending jobs and commits the plan.
func (l *logged) cycle(now time.Time) state.CommitResult {
	l.t.Helper()
	p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now})
	p.Pending = nil
	return l.must(&state.PlanCommit{Plan: p, Now: now}).(state.CommitResult)
}

func (l *logged) report(now time.Time, st structs.TaskState, code int, jobs ...structs.JobID) {
	l.t.Helper()
	var ev []structs.TaskEvent
	for _, j := range jobs {
		for _, t := range l.s.TasksOf(j) {
			if t.State.HoldsResources() {
				ev = append(ev, structs.TaskEvent{Task: t.ID, State: st, ExitCode: code, Time: now})
			}
		}
	}
	l.must(&state.TaskUpdate{Events: ev})
}

func job(id string, b *st.JobBuilder) *structs.Job {
	j := b.Obj()
	j.ID = structs.JobID(id)
	return j
}

func TestJobLifecycle(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}})
	res := l.must(&state.JobSubmit{RequestID: "r1", Job: job("train-1", st.NewJob("train", "u1").MPI(2).GPU("A", 8)), Now: t0})
	assert.Equal(t, state.SubmitResult{JobID: "train-1"}, res)
	// A retry with the same request ID returns the same job.
	res = l.must(&state.JobSubmit{RequestID: "r1", Job: job("train-2", st.NewJob("train", "u1").MPI(2).GPU("A", 8)), Now: t0})
	assert.Equal(t, state.SubmitResult{JobID: "train-1", Existing: true}, res)
	assert.Len(t, l.s.Jobs, 1)
	_, err := l.do(&state.JobSubmit{RequestID: "r1", Job: job("other-1", st.NewJob("other", "u1").GPU("A", 1)), Now: t0})
	require.ErrorIs(t, err, state.ErrExists, "a request ID reused for another job is refused")
	// So is the same name with an edited spec: it returned the old job.
	_, err = l.do(&state.JobSubmit{RequestID: "r1", Job: job("train-4", st.NewJob("train", "u1").MPI(2).GPU("A", 4)), Now: t0})
	require.ErrorIs(t, err, state.ErrExists)
	assert.EqualError(t, err, `request ID "r1" was used for job train-1 (train): this spec differs in resources: use a new request ID for a new job`)
	assert.Len(t, l.s.Jobs, 1)
	// The same name without the request ID is refused and charges nothing.
	_, err = l.do(&state.JobSubmit{Job: job("train-3", st.NewJob("train", "u1").GPU("A", 1)), Now: t0})
	require.ErrorIs(t, err, state.ErrExists)
	assert.Equal(t, int64(16), l.s.Usage["user:u1"]["gpu/A"])

	cr := l.cycle(t0)
	assert.Equal(t, []structs.JobID{"train-1"}, cr.Placed)
	assert.Equal(t, structs.JobScheduled, l.s.Jobs["train-1"].State)
	l.report(t0.Add(time.Second), structs.TaskRunning, 0, "train-1")
	assert.Equal(t, structs.JobRunning, l.s.Jobs["train-1"].State)
	l.report(t0.Add(time.Minute), structs.TaskSucceeded, 0, "train-1")
	assert.Equal(t, structs.JobSucceeded, l.s.Jobs["train-1"].State)
	assert.Empty(t, l.s.Usage["user:u1"])
	assert.Empty(t, l.s.Snapshot().Tasks, "resources freed the moment the job ended")

	// Retention: ended jobs go after the cut-off.
	assert.Equal(t, state.ExpireResult{Jobs: 0}, l.must(&state.JobsExpire{Before: t0}))
	assert.Equal(t, state.ExpireResult{Jobs: 1}, l.must(&state.JobsExpire{Before: t0.Add(time.Hour)}))
	assert.Empty(t, l.s.Jobs)
	assert.Empty(t, l.s.Tasks)
	assert.Empty(t, l.s.Requests)
}

func TestPreemptionRequeuesVictim(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("low-1", st.NewJob("low", "u2").Low().GPU("A", 8)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "low-1")
	l.must(&state.JobSubmit{Job: job("norm-1", st.NewJob("norm", "u1").GPU("A", 8)), Now: t0})
	l.cycle(t0)
	tasks := l.s.TasksOf("low-1")
	require.Len(t, tasks, 1)
	assert.Equal(t, structs.TaskStopping, tasks[0].State)
	assert.Equal(t, structs.StopPreempted, tasks[0].StopReason)
	require.Len(t, l.s.Reservations, 1)
	assert.Equal(t, structs.JobID("norm-1"), l.s.Reservations[0].Job)
	l.report(t0.Add(10*time.Second), structs.TaskFailed, 143, "low-1")
	low := l.s.Jobs["low-1"]
	assert.Equal(t, structs.JobPending, low.State)
	assert.Equal(t, 1, low.Attempt)
	assert.Equal(t, 1, low.Preemptions)
	cr := l.cycle(t0.Add(11 * time.Second))
	assert.Equal(t, []structs.JobID{"norm-1"}, cr.Placed, "the preemptor gets the room, not the victim")
	assert.Empty(t, l.s.Reservations)
}

func TestStalePlanIsRejectedWhole(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}})
	l.must(&state.JobSubmit{Job: job("g-1", st.NewJob("g", "u1").MPI(2).GPU("A", 8)), Now: t0})
	plan := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: t0})
	require.Len(t, plan.Placements, 1)
	// Meanwhile n2 goes away from the schedulable set.
	n2 := *l.s.Nodes["n2"]
	n2.State = structs.NodeDraining
	l.must(&state.NodeUpsert{Node: &n2})
	cr := l.must(&state.PlanCommit{Plan: plan, Now: t0}).(state.CommitResult)
	assert.Empty(t, cr.Placed)
	require.Len(t, cr.Rejected, 1)
	assert.Equal(t, "node n2 is gone or not ready", cr.Rejected[0].Reason)
	assert.Empty(t, l.s.TasksOf("g-1"), "a gang never lands partly")
}

func TestCancelAndScale(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Service(4, 2).GPU("A", 1)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	assert.Equal(t, int64(4), l.s.Usage["user:u1"]["gpu/A"])
	_, err := l.do(&state.ServiceScale{ID: "s-1", Replicas: 9, Now: t0})
	var qe *sched.QuotaError
	require.ErrorAs(t, err, &qe)
	assert.EqualError(t, err, "quota exceeded for user:u1: gpu/A quota 8, in use 4, requested 5", "in use as quota get shows it, and what the scale adds")
	assert.Equal(t, int64(4), l.s.Usage["user:u1"]["gpu/A"], "a refused scale changes nothing")
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 2, Now: t0})
	assert.Equal(t, int64(2), l.s.Usage["user:u1"]["gpu/A"])
	stopping := 0
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.State == structs.TaskStopping {
			stopping++
		}
	}
	assert.Equal(t, 2, stopping)
	l.must(&state.JobCancel{ID: "s-1", Now: t0})
	assert.Equal(t, structs.JobCancelled, l.s.Jobs["s-1"].State)
	assert.Empty(t, l.s.Usage["user:u1"])
	_, err = l.do(&state.JobCancel{ID: "s-1", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	l.report(t0, structs.TaskFailed, 143, "s-1")
	assert.Empty(t, l.s.Snapshot().Tasks)
}

func TestFailedReplicaRestartsGang(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}})
	j := job("m-1", st.NewJob("m", "u1").MPI(2).GPU("A", 8))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "m-1")
	w := l.s.TasksOf("m-1")[1]
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: w.ID, State: structs.TaskFailed, ExitCode: 1, Time: t0}}})
	assert.Equal(t, "restart 1 of 3: replica 1 failed with exit code 1", l.s.Jobs["m-1"].Reason)
	l.report(t0, structs.TaskFailed, 143, "m-1")
	m := l.s.Jobs["m-1"]
	assert.Equal(t, structs.JobPending, m.State)
	assert.Equal(t, 1, m.Attempt)
	assert.Equal(t, int64(16), l.s.Usage["user:u1"]["gpu/A"], "pending again, still charged once")
	cr := l.cycle(t0)
	assert.Equal(t, []structs.JobID{"m-1"}, cr.Placed)
}

// Applying the same log to a fresh state gives the same state.
func TestReplayIsDeterministic(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.C64("c1"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8, "cpu": 8000, "memory": 64 * st.Gi}}})
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").GPU("A", 4)), Now: t0})
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").CPU(4, 8)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "a-1", "b-1")
	l.report(t0, structs.TaskSucceeded, 0, "b-1")
	again := state.New()
	for i, b := range l.log {
		c, err := state.Decode(b)
		require.NoError(t, err)
		_, _ = again.Apply(uint64(i+1), c)
	}
	want, err := json.Marshal(l.s)
	require.NoError(t, err)
	got, err := json.Marshal(again)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}
