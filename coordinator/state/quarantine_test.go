package state_test

import (
	"encoding/json"
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

const eccMsg = "gpu preflight failed: ecc: GPU 1 (GPU-b) has 2 uncorrectable ECC errors"

// preflight reports that task id's preflight failed on accels (none: atom
// could not tell which).
func (l *logged) preflight(now time.Time, id structs.TaskID, msg string, accels ...int) {
	l.t.Helper()
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: id, State: structs.TaskFailed, ExitCode: 3,
		Message: msg, Reason: structs.ReasonPreflightFailed, Accelerators: accels, Time: now}}})
}

// replace schedules like cycle, naming a replica placed again apart from
// its earlier task (as the leader does).
func (l *logged) replace(now time.Time) {
	l.t.Helper()
	p := sched.Schedule(l.s.Snapshot(), sched.Input{Pending: l.s.Pending(), Now: now})
	p.Pending = nil
	for i := range p.Placements {
		pl := &p.Placements[i]
		for k := range pl.Tasks {
			tp := &pl.Tasks[k]
			tp.ID = structs.NewTaskID(pl.Job, tp.Index, fmt.Sprintf("r%d", len(l.s.Tasks)+k))
		}
	}
	l.must(&state.PlanCommit{Plan: p, Now: now})
}

// json returns the state as JSON without its index (a refused command
// still advances it).
func (l *logged) json() string {
	l.t.Helper()
	c := *l.s
	c.Index = 0
	b, err := json.Marshal(&c)
	require.NoError(l.t, err)
	return string(b)
}

// live returns job id's one task that holds resources.
func (l *logged) live(id structs.JobID) *structs.Task {
	l.t.Helper()
	var out []*structs.Task
	for _, tk := range l.s.TasksOf(id) {
		if tk.State.HoldsResources() {
			out = append(out, tk)
		}
	}
	require.Len(l.t, out, 1)
	return out[0]
}

// A failed preflight quarantines the named accelerators, fails the task,
// and requeues the job on a new attempt that uses neither its restarts
// nor its preemptions; the next cycle places it off the quarantined GPU.
func TestPreflightQuarantinesAndRequeues(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").GPU("A", 2)), Now: t0})
	l.cycle(t0)
	first := l.live("a-1")
	require.Equal(t, structs.AccelMask(0b11), first.Accels)
	l.report(t0, structs.TaskRunning, 0, "a-1")

	t1 := t0.Add(time.Minute)
	l.preflight(t1, first.ID, eccMsg, 1)
	assert.Equal(t, []structs.Quarantine{{Accel: 1, Reason: eccMsg, Since: t1, Task: first.ID}}, l.s.Nodes[first.Node].Quarantined)
	assert.Equal(t, structs.TaskFailed, l.s.Tasks[first.ID].State)
	assert.Equal(t, "PreflightFailed: "+eccMsg, l.s.Tasks[first.ID].Message, "the task says why, after its job moved on")
	a := l.s.Jobs["a-1"]
	assert.Equal(t, structs.JobPending, a.State)
	assert.Equal(t, "requeued: accelerator 1 of node n1 failed preflight: "+eccMsg, a.Reason)
	assert.Equal(t, 1, a.Attempt)
	assert.Equal(t, 1, a.PreflightFailures)
	assert.Zero(t, a.Preemptions, "not a preemption")
	assert.Equal(t, t1, a.PendingSince)
	assert.Equal(t, int64(2), l.s.Usage["user:u1"]["gpu/A"], "still charged once while pending")

	l.cycle(t1)
	second := l.live("a-1")
	assert.Zero(t, second.Accels&l.s.Nodes[second.Node].QuarantinedMask(), "never on a quarantined accelerator")
	assert.Equal(t, 1, second.Attempt)

	// The same log applied again reaches the same state (time from events).
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

// Requeues after failed preflights leave the restart budget whole: an
// OnFailure job still restarts MaxRestarts times afterwards.
func TestPreflightKeepsRestartBudget(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	j := job("r-1", st.NewJob("r", "u1").GPU("A", 1))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cycle(t0)
	l.preflight(t0, l.live("r-1").ID, "gpu preflight failed: count: 0 GPUs visible, 1 allocated")
	later := t0.Add(10 * time.Minute) // past each restart's back-off (0, 10 s, 20 s)
	for i := range state.MaxRestarts {
		l.cycle(later)
		l.report(t0, structs.TaskFailed, 1, "r-1")
		require.Equal(t, structs.JobPending, l.s.Jobs["r-1"].State, "restart %d", i+1)
	}
	l.cycle(later)
	l.report(t0, structs.TaskFailed, 1, "r-1")
	r := l.s.Jobs["r-1"]
	assert.Equal(t, structs.JobFailed, r.State)
	assert.Equal(t, "replica 0 failed with exit code 1 (no restarts left: 3 of 3 used)", r.Reason)
	assert.Equal(t, 1+state.MaxRestarts, r.Attempt)
}

// A job that fails preflight on MaxPreflightRequeues allocations is
// suspect itself: the next failure quarantines nothing and is an ordinary
// failure (restart policy Never: the job fails).
func TestPreflightRequeuesAreBounded(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().GPU("A", 1)), Now: t0})
	msg := "gpu preflight failed: nvml: accelerators allocated but NVML is not available (1 A allocated)"
	for range state.MaxPreflightRequeues {
		l.cycle(t0)
		l.preflight(t0, l.live("b-1").ID, msg)
	}
	assert.Len(t, l.s.Nodes["n1"].Quarantined, state.MaxPreflightRequeues, "a new accelerator each time")
	l.cycle(t0)
	l.preflight(t0, l.live("b-1").ID, msg)
	b := l.s.Jobs["b-1"]
	assert.Equal(t, structs.JobFailed, b.State)
	assert.Equal(t, "replica 0 failed with exit code 3: "+msg+" (nothing quarantined: the job failed preflight on 3 allocations already, so the job itself is suspect)", b.Reason)
	assert.Len(t, l.s.Nodes["n1"].Quarantined, state.MaxPreflightRequeues)
}

// In a gang, the failed replica's accelerators are quarantined (all of
// them when atom could not say which), its sibling stops, and the gang is
// requeued whole, which its events do not call a restart, and placed on
// the other nodes.
func TestPreflightRequeuesGang(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"), st.G8("n3", "A"))
	l.must(&state.JobSubmit{Job: job("m-1", st.NewJob("m", "u1").Low().MPI(2).GPU("A", 8)), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "m-1")
	tasks := l.s.TasksOf("m-1")
	require.Len(t, tasks, 2)
	bad, sib := tasks[1], tasks[0]
	l.preflight(t0, bad.ID, "gpu preflight failed: list: driver error")
	assert.Equal(t, structs.AccelMask(0xff), l.s.Nodes[bad.Node].QuarantinedMask())
	assert.Equal(t, structs.TaskStopping, l.s.Tasks[sib.ID].State)
	assert.Empty(t, l.s.Nodes[sib.Node].Quarantined, "the sibling's node is fine")
	l.report(t0, structs.TaskFailed, 143, "m-1")
	m := l.s.Jobs["m-1"]
	assert.Equal(t, structs.JobPending, m.State)
	assert.Equal(t, "requeued: accelerators 0,1,2,3,4,5,6,7 of node "+string(bad.Node)+" failed preflight: gpu preflight failed: list: driver error", m.Reason)
	assert.Equal(t, 1, m.Attempt)
	assert.Zero(t, m.Preemptions)
	var kinds []structs.EventType
	for _, e := range l.s.Events["m-1"].Events {
		kinds = append(kinds, e.Type)
	}
	assert.Equal(t, []structs.EventType{structs.EventSubmitted, structs.EventPlaced, structs.EventPlaced, structs.EventStarted, structs.EventStarted,
		structs.EventRunning, structs.EventFailed, structs.EventQuarantined, structs.EventRequeuing, structs.EventStopped, structs.EventRequeued}, kinds)
	l.cycle(t0)
	var nodes []structs.NodeID
	for _, tk := range l.s.TasksOf("m-1") {
		if tk.Attempt == 1 {
			nodes = append(nodes, tk.Node)
		}
	}
	assert.Len(t, nodes, 2)
	assert.NotContains(t, nodes, bad.Node)
}

// A service replica whose preflight failed is placed again elsewhere; a
// cancelled job's stopping task still quarantines what it found.
func TestPreflightServiceAndStoppingTask(t *testing.T) {
	l := newLogged(t, st.GPUNode("n1", "A", 1), st.GPUNode("n2", "A", 1))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).GPU("A", 1)), Now: t0})
	l.cycle(t0)
	first := l.live("s-1")
	l.preflight(t0, first.ID, eccMsg)
	assert.Equal(t, "replica 0 placed again: accelerator 0 of node "+string(first.Node)+" failed preflight: "+eccMsg, l.s.Jobs["s-1"].Reason)
	l.replace(t0)
	second := l.live("s-1")
	assert.NotEqual(t, first.Node, second.Node)

	l.must(&state.JobCancel{ID: "s-1", Now: t0})
	l.preflight(t0, second.ID, eccMsg)
	assert.Equal(t, structs.JobCancelled, l.s.Jobs["s-1"].State)
	assert.Len(t, l.s.Nodes[second.Node].Quarantined, 1)
	assert.Empty(t, l.s.Snapshot().Tasks)
	l.must(&state.JobSubmit{Job: job("t-1", st.NewJob("t", "u1").Low().GPU("A", 1)), Now: t0})
	l.cycle(t0)
	assert.Empty(t, l.s.TasksOf("t-1"), "both accelerators are quarantined: the job waits")
}

// Bad reasons and accelerator lists are refused and change nothing.
func TestTaskEventReasonChecked(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").Low().GPU("A", 1)), Now: t0})
	l.cycle(t0)
	id := l.live("a-1").ID
	cases := map[string]struct {
		ev  structs.TaskEvent
		msg string
	}{
		"unknown reason":      {structs.TaskEvent{State: structs.TaskFailed, Reason: "Cosmic"}, `reason "Cosmic" is not allowed: use PreflightFailed, StoppedOutside, CoordinatorLost, LauncherGone or leave it out`},
		"reason with Running": {structs.TaskEvent{State: structs.TaskRunning, Reason: structs.ReasonPreflightFailed}, "only allowed with state Failed"},
		"accels, no reason":   {structs.TaskEvent{State: structs.TaskFailed, Accelerators: []int{0}}, "only allowed with reason PreflightFailed"},
		"index 64":            {structs.TaskEvent{State: structs.TaskFailed, Reason: structs.ReasonPreflightFailed, Accelerators: []int{64}}, "accelerator 64 is not allowed: use indices 0 to 63"},
		"negative index":      {structs.TaskEvent{State: structs.TaskFailed, Reason: structs.ReasonPreflightFailed, Accelerators: []int{-1}}, "accelerator -1"},
	}
	for name, c := range cases {
		before := l.json()
		c.ev.Task, c.ev.Time = id, t0
		_, err := l.do(&state.TaskUpdate{Events: []structs.TaskEvent{c.ev}})
		require.ErrorIs(t, err, state.ErrInvalid, name)
		assert.Contains(t, err.Error(), c.msg, name)
		assert.JSONEq(t, before, l.json(), name)
	}
}

// An admin's release returns accelerators to service; node specs keep
// the quarantine; the state survives a snapshot round trip.
func TestReleaseAndSnapshot(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").Low().GPU("A", 4)), Now: t0})
	l.cycle(t0)
	l.preflight(t0, l.live("a-1").ID, eccMsg, 1, 3)
	require.Equal(t, structs.AccelMask(0b1010), l.s.Nodes["n1"].QuarantinedMask())

	// A node spec applied again keeps the quarantine; a smaller node drops
	// what it no longer has.
	n1 := *st.G8("n1", "A")
	l.must(&state.NodeUpsert{Node: &n1})
	assert.Equal(t, structs.AccelMask(0b1010), l.s.Nodes["n1"].QuarantinedMask())
	assert.Empty(t, n1.Quarantined, "the command's node is not changed")

	// Snapshot round trip (the FSM persists the state as JSON).
	b, err := json.Marshal(l.s)
	require.NoError(t, err)
	restored := state.New()
	require.NoError(t, json.Unmarshal(b, restored))
	assert.Equal(t, l.s.Nodes["n1"].Quarantined, restored.Nodes["n1"].Quarantined)
	assert.Equal(t, 1, restored.Jobs["a-1"].PreflightFailures)
	require.NoError(t, restored.CheckInvariants())

	// Bad releases change nothing.
	before := l.json()
	for _, c := range []struct {
		cmd  state.NodeRelease
		want error
		msg  string
	}{
		{state.NodeRelease{Name: "n9"}, state.ErrNotFound, "node n9"},
		{state.NodeRelease{Name: "n1", Accels: []int{8}}, state.ErrInvalid, "accelerator 8 is not allowed: use 0 to 7"},
		{state.NodeRelease{Name: "n1", Accels: []int{-1}}, state.ErrInvalid, "use 0 to 7"},
		{state.NodeRelease{Name: "c1", Accels: []int{0}}, state.ErrInvalid, "node c1 has no accelerators"},
	} {
		_, err := l.do(&c.cmd)
		require.ErrorIs(t, err, c.want)
		assert.Contains(t, err.Error(), c.msg)
	}
	assert.JSONEq(t, before, l.json())

	// Encode/Decode round trip of the command.
	enc, err := state.Encode(&state.NodeRelease{Name: "n1", Accels: []int{3}})
	require.NoError(t, err)
	dec, err := state.Decode(enc)
	require.NoError(t, err)
	assert.Equal(t, &state.NodeRelease{Name: "n1", Accels: []int{3}}, dec)

	res := l.must(&state.NodeRelease{Name: "n1", Accels: []int{3, 5}})
	assert.Equal(t, state.ReleaseResult{Released: []int{3}, Quarantined: []int{1}}, res)
	res = l.must(&state.NodeRelease{Name: "n1", Accels: []int{3}})
	assert.Equal(t, state.ReleaseResult{Released: []int{}, Quarantined: []int{1}}, res, "a retried release is harmless")
	res = l.must(&state.NodeRelease{Name: "n1"})
	assert.Equal(t, state.ReleaseResult{Released: []int{1}, Quarantined: []int{}}, res)
	assert.Empty(t, l.s.Nodes["n1"].Quarantined)
}
