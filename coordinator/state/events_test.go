package state_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// events lists job id's events as "+SECONDS TYPE [TASK]: MESSAGE", the
// time relative to t0, checking that they are numbered in order.
func (l *logged) events(id structs.JobID) []string {
	l.t.Helper()
	var out []string
	var last uint64
	for _, e := range l.s.Events[id].Events {
		require.Greater(l.t, e.Seq, last, "events are numbered in order")
		last = e.Seq
		task := ""
		if e.Task != "" {
			task = " " + string(e.Task)
		}
		out = append(out, fmt.Sprintf("+%d %s%s: %s", int(e.Time.Sub(t0)/time.Second), e.Type, task, e.Message))
	}
	return out
}

// A gang's whole life, each change at the time its command carried.
func TestEventsJobLifecycle(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.G8("n2", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}})
	l.must(&state.JobSubmit{Job: job("train-1", st.NewJob("train", "u1").MPI(2).GPU("A", 8)), Now: t0})
	l.cycle(t0.Add(time.Second))
	l.report(t0.Add(2*time.Second), structs.TaskRunning, 0, "train-1")
	l.report(t0.Add(60*time.Second), structs.TaskSucceeded, 0, "train-1")
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: normal priority, 2 replica(s) of gpu/A=8",
		"+1 Placed train-1-0-a0: replica 0 placed on n1: cpu=96 memory=768Gi gpu/A=8 (accelerators 0,1,2,3,4,5,6,7)",
		"+1 Placed train-1-1-a0: replica 1 placed on n2: cpu=96 memory=768Gi gpu/A=8 (accelerators 0,1,2,3,4,5,6,7)",
		"+2 Started train-1-0-a0: replica 0 started on n1",
		"+2 Started train-1-1-a0: replica 1 started on n2",
		"+2 Running: running: 2 replica(s) started",
		"+60 Succeeded train-1-0-a0: replica 0 exited 0",
		"+60 Succeeded: succeeded: launcher exited 0; stopping 1 task(s)",
		"+60 Stopped train-1-1-a0: replica 1 stopped (JobEnded) with exit code 0",
	}, l.events("train-1"))
	j := l.s.Jobs["train-1"]
	assert.Equal(t, []time.Time{t0.Add(2 * time.Second), t0.Add(time.Minute)}, []time.Time{j.StartedAt, j.EndedAt}, "the job's start and end")
	for _, tk := range l.s.TasksOf("train-1") {
		assert.Equal(t, []time.Time{t0.Add(2 * time.Second), t0.Add(time.Minute)}, []time.Time{tk.StartedAt, tk.EndedAt}, "task %s", tk.ID)
	}
	placed := l.s.Events["train-1"].Events[1]
	assert.Equal(t, structs.NodeID("n1"), placed.Node)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, placed.Accelerators)
	require.NotNil(t, placed.Replica)
	assert.Equal(t, 0, *placed.Replica)
	assert.Len(t, l.s.Recent, 9, "the cluster's recent events hold them too")

	// Expired with its job: nothing of it is left.
	l.must(&state.JobsExpire{Before: t0.Add(time.Hour)})
	assert.Empty(t, l.s.Events)
	assert.Empty(t, l.s.Recent)
}

// A replica that fails restarts the whole job (OnFailure): the failure
// with its exit code, the stop of its sibling, the requeue; then a
// cancel, said with who cancelled.
func TestEventsRestartAndCancel(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	j := job("g-1", st.NewJob("g", "u1").Low().Replicas(2).CPU(1, 1))
	j.RestartPolicy = structs.RestartOnFailure
	l.must(&state.JobSubmit{Job: j, Now: t0})
	l.cycle(t0)
	l.report(t0.Add(time.Second), structs.TaskRunning, 0, "g-1")
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "g-1-1-a0", State: structs.TaskFailed, ExitCode: 2, Message: "boom", Time: t0.Add(5 * time.Second)}}})
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: "g-1-0-a0", State: structs.TaskFailed, ExitCode: 143, Time: t0.Add(6 * time.Second)}}})
	l.must(&state.JobCancel{ID: "g-1", Now: t0.Add(7 * time.Second), By: "u1"})
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: low priority, 2 replica(s) of cpu=1 memory=1Gi",
		"+0 Placed g-1-0-a0: replica 0 placed on c1: cpu=1 memory=1Gi",
		"+0 Placed g-1-1-a0: replica 1 placed on c1: cpu=1 memory=1Gi",
		"+1 Started g-1-0-a0: replica 0 started on c1",
		"+1 Started g-1-1-a0: replica 1 started on c1",
		"+1 Running: running: 2 replica(s) started",
		"+5 Failed g-1-1-a0: replica 1 failed with exit code 2: boom",
		"+5 Restarting: restart 1 of 3: replica 1 failed with exit code 2: boom; stopping 1 task(s) first",
		"+6 Stopped g-1-0-a0: replica 0 stopped (GangRestart) with exit code 143",
		"+6 Requeued: pending again as attempt 2: restart 1 of 3: replica 1 failed with exit code 2: boom",
		"+7 Cancelled: cancelled by u1",
	}, l.events("g-1"))
	assert.True(t, l.s.Jobs["g-1"].StartedAt.IsZero(), "its second attempt never started")
	assert.Equal(t, t0.Add(7*time.Second), l.s.Jobs["g-1"].EndedAt)
	ev := l.s.Events["g-1"].Events
	require.NotNil(t, ev[6].ExitCode)
	assert.Equal(t, 2, *ev[6].ExitCode)
	assert.Equal(t, 0, ev[6].Attempt)
	assert.Equal(t, 1, ev[10].Attempt, "the cancel is of its second attempt (1: counted from 0)")
}

// A preemption is recorded on both jobs, each naming the other, with the
// accelerator time the victim had run.
func TestEventsPreemption(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	l.must(&state.JobSubmit{Job: job("low-1", st.NewJob("low", "u2").Low().GPU("A", 8)), Now: t0})
	l.cycle(t0)
	l.report(t0.Add(10*time.Second), structs.TaskRunning, 0, "low-1")
	l.must(&state.JobSubmit{Job: job("norm-1", st.NewJob("norm", "u1").GPU("A", 8)), Now: t0.Add(100 * time.Second)})
	l.cycle(t0.Add(110 * time.Second))
	l.report(t0.Add(120*time.Second), structs.TaskFailed, 143, "low-1")
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u2: low priority, 1 replica(s) of gpu/A=8",
		"+0 Placed low-1-0-a0: replica 0 placed on n1: cpu=96 memory=768Gi gpu/A=8 (accelerators 0,1,2,3,4,5,6,7)",
		"+10 Started low-1-0-a0: replica 0 started on n1",
		"+10 Running: running: 1 replica(s) started",
		"+110 Preempted: preempted by norm-1: stopping its tasks on n1, freeing cpu=96 memory=768Gi gpu/A=8, 800 GPU-seconds of its work lost unless it checkpointed",
		"+120 Stopped low-1-0-a0: replica 0 stopped (Preempted) with exit code 143",
		"+120 Requeued: pending again as attempt 2: Preempted",
	}, l.events("low-1"))
	assert.Equal(t, []string{
		"+100 Submitted: submitted by u1: normal priority, 1 replica(s) of gpu/A=8",
		"+110 Preempting: preempting low-priority job low-1 on n1 to make room: freeing cpu=96 memory=768Gi gpu/A=8, 800 GPU-seconds of its work lost unless it checkpointed",
	}, l.events("norm-1"))
	pre := l.s.Events["low-1"].Events[4]
	assert.Equal(t, structs.JobID("norm-1"), pre.Related)
	assert.Equal(t, int64(800), pre.GPUSeconds)
	assert.Equal(t, structs.JobID("low-1"), l.s.Events["norm-1"].Events[1].Related)
}

// A failed preflight records the quarantine of the accelerators; a
// service's scale is recorded with who scaled it.
func TestEventsQuarantineAndScale(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"))
	l.must(&state.JobSubmit{Job: job("s-1", st.NewJob("s", "u1").Low().Service(1, 1).GPU("A", 2)), Now: t0})
	l.cycle(t0)
	l.preflight(t0.Add(time.Second), "s-1-0-a0", eccMsg, 1)
	l.must(&state.ServiceScale{ID: "s-1", Replicas: 3, Now: t0.Add(2 * time.Second), By: "u1"})
	assert.Equal(t, []string{
		"+0 Submitted: submitted by u1: low priority, 1 replica(s) of gpu/A=2",
		"+0 Placed s-1-0-a0: replica 0 placed on n1: cpu=24 memory=192Gi gpu/A=2 (accelerators 0,1)",
		"+1 Failed s-1-0-a0: replica 0 failed: PreflightFailed: " + eccMsg,
		"+1 Quarantined s-1-0-a0: accelerator 1 of node n1 quarantined: replica 0 failed preflight: " + eccMsg,
		"+2 Scaled: scaled from 1 to 3 replicas by u1",
	}, l.events("s-1"))
	assert.Equal(t, []int{1}, l.s.Events["s-1"].Events[3].Accelerators)
}

// Each job keeps its newest MaxJobEvents events and counts the dropped;
// the cluster its newest MaxRecentEvents. Both survive a snapshot.
func TestEventsBounded(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("web-1", st.NewJob("web", "u1").Low().Service(1, 1).CPU(1, 1)), Now: t0})
	now := t0
	for i := 0; l.s.EventSeq < state.MaxRecentEvents+10; i++ {
		l.recycle(now)
		now = now.Add(time.Hour) // past any back-off
		l.report(now, structs.TaskRunning, 0, "web-1")
		l.report(now, structs.TaskFailed, 1, "web-1")
	}
	h := l.s.Events["web-1"]
	require.Len(t, h.Events, state.MaxJobEvents)
	assert.Equal(t, int(l.s.EventSeq)-state.MaxJobEvents, h.Dropped)
	assert.Equal(t, l.s.EventSeq, h.Events[state.MaxJobEvents-1].Seq, "the newest kept")
	require.Len(t, l.s.Recent, state.MaxRecentEvents)
	assert.Equal(t, l.s.EventSeq, l.s.Recent[state.MaxRecentEvents-1].Seq)

	b, err := json.Marshal(l.s)
	require.NoError(t, err)
	r := state.New()
	require.NoError(t, json.Unmarshal(b, r))
	assert.Equal(t, l.s.Events, r.Events)
	assert.Equal(t, l.s.Recent, r.Recent)
	assert.Equal(t, l.s.EventSeq, r.EventSeq)
}

// A Clone (what a snapshot persists) does not see events recorded after
// it, even though it shares their slices.
func TestEventsCloneUnchanged(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("a-1", st.NewJob("a", "u1").Low().CPU(1, 1)), Now: t0})
	c := l.s.Clone()
	before, err := json.Marshal(c)
	require.NoError(t, err)
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "a-1")
	after, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
	assert.Len(t, c.Events["a-1"].Events, 1)
	assert.Len(t, l.s.Events["a-1"].Events, 4)
}

// Edge devices are given by index, as accelerators are: the lowest free
// ones of the node.
func TestDevicesByIndex(t *testing.T) {
	edge := &structs.Node{Name: "e1", Capacity: structs.Resources{MilliCPU: 8000, Memory: 16 << 30, Devices: map[string]int64{"jetson": 3}}}
	l := newLogged(t, edge)
	edgeJob := func(id string, n int64) *structs.Job {
		j := job(id, st.NewJob(id, "u1").Low().CPU(1, 1))
		j.Resources = structs.Resources{MilliCPU: 1000, Devices: map[string]int64{"jetson": n}}
		return j
	}
	l.must(&state.JobSubmit{Job: edgeJob("a-1", 1), Now: t0})
	l.must(&state.JobSubmit{Job: edgeJob("b-1", 2), Now: t0})
	l.cycle(t0)
	assert.Equal(t, map[string][]int{"jetson": {0}}, l.s.Tasks["a-1-0-a0"].Devices)
	assert.Equal(t, map[string][]int{"jetson": {1, 2}}, l.s.Tasks["b-1-0-a0"].Devices)
	l.report(t0, structs.TaskSucceeded, 0, "b-1")
	l.must(&state.JobSubmit{Job: edgeJob("c-1", 2), Now: t0})
	l.cycle(t0)
	assert.Equal(t, map[string][]int{"jetson": {1, 2}}, l.s.Tasks["c-1-0-a0"].Devices, "those freed")
}

// A job name is unique among its owner's (or project's) active jobs: the
// refusal names the job that holds it; once that ends, the name is free.
func TestJobNameTaken(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("web-1", st.NewJob("web", "u1").Low().CPU(1, 1)), Now: t0})
	_, err := l.do(&state.JobSubmit{Job: job("web-2", st.NewJob("web", "u1").Low().CPU(1, 1)), Now: t0})
	require.ErrorIs(t, err, state.ErrExists)
	assert.EqualError(t, err, "job name web is taken by user u1's active job web-1 (Pending): a name is unique among a user's (or a project's) jobs that have not ended; cancel it, wait for it to end, or choose another name")
	l.must(&state.JobSubmit{Job: job("web-3", st.NewJob("web", "u2").Low().CPU(1, 1)), Now: t0}) // another user's namespace
	l.must(&state.JobCancel{ID: "web-1", Now: t0})
	l.must(&state.JobSubmit{Job: job("web-4", st.NewJob("web", "u1").Low().CPU(1, 1)), Now: t0})
}
