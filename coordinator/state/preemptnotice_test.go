package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// noticed is job b with preemption notice n.
func noticed(id string, b *st.JobBuilder, n structs.PreemptNotice) *structs.Job {
	j := job(id, b)
	j.PreemptNotice = &n
	return j
}

// A preemption notice longer than the job's pool allows is refused at
// submit, naming the pool and its maximum (the public pool's 5 minutes, a
// project pool's maxPreemptNotice); within it, a preempted task's notice
// ends that long after its preemption, and both jobs' events say so.
func TestPreemptNoticeWithinItsPool(t *testing.T) {
	l := newLogged(t, st.G8("n1", "A"), st.C64("c1"))
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: "perception", Project: "perception", Members: []structs.UserID{"u2"},
		MaxPreemptNotice: structs.Duration(10 * time.Minute)}})
	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})

	_, err := l.do(&state.JobSubmit{Job: noticed("long-1", st.NewJob("long", "u9").Low().GPU("A", 8), structs.PreemptNotice{Seconds: 301}), Now: t0})
	assert.EqualError(t, err, "preemptNotice.seconds 301 is not allowed: the public pool allows notices of at most 300 seconds (5m0s): use 1 to 300")
	_, err = l.do(&state.JobSubmit{Job: noticed("plong-1", st.NewJob("plong", "u2").Project("perception").Low().CPU(1, 1), structs.PreemptNotice{Seconds: 601}), Now: t0})
	assert.EqualError(t, err, "preemptNotice.seconds 601 is not allowed: pool perception allows notices of at most 600 seconds (10m0s, its maxPreemptNotice): use 1 to 600")
	l.must(&state.JobSubmit{Job: noticed("pok-1", st.NewJob("pok", "u2").Project("perception").Low().CPU(1, 1), structs.PreemptNotice{Seconds: 600}), Now: t0})

	l.must(&state.JobSubmit{Job: noticed("low-1", st.NewJob("low", "u9").Low().GPU("A", 8), structs.PreemptNotice{Signal: "SIGUSR1", Seconds: 60}), Now: t0})
	l.cycle(t0)
	l.report(t0, structs.TaskRunning, 0, "low-1")
	at := t0.Add(10 * time.Second)
	l.must(&state.JobSubmit{Job: job("norm-1", st.NewJob("norm", "u1").GPU("A", 8)), Now: at})
	l.cycle(at)
	tasks := l.s.TasksOf("low-1")
	require.Len(t, tasks, 1)
	assert.Equal(t, structs.TaskStopping, tasks[0].State)
	assert.Equal(t, at.Add(time.Minute), tasks[0].NoticeUntil)
	evs := l.events("low-1")
	assert.Contains(t, evs[len(evs)-1], "preempted by norm-1: stopping its tasks on n1 after a 1m0s notice, freeing")
}
