package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A task's launch endpoint is committed when it first appears and when it
// changes; the same endpoint in every later beat commits nothing.
func TestHeartbeatEndpoint(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, nil)
	c.seed(st.C64("c1"))
	j := st.NewJob("cmd", "u1").CPU(1, 1).Obj()
	j.ID = "cmd-1"
	c.apply(&state.JobSubmit{RequestID: "s", Job: j, Now: time.Now()})
	l := c.leader()
	require.Eventually(t, func() bool { return jobOf(l, "cmd-1").State == structs.JobScheduled }, waitFor, tick)
	tasks, toks := tasksOf(l, "cmd-1")
	id, tok := tasks[0].ID, toks[tasks[0].ID]
	index := func() uint64 {
		var i uint64
		l.Read(func(s *state.State) { i = s.Index })
		return i
	}
	endpoint := func() string {
		ts, _ := tasksOf(l, "cmd-1")
		return ts[0].Endpoint
	}
	running := func(ep string) structs.TaskEvent { return structs.TaskEvent{State: structs.TaskRunning, Endpoint: ep} }

	before := index()
	require.NoError(t, l.Heartbeat(id, tok, running("10.0.0.7:7070")))
	assert.Equal(t, "10.0.0.7:7070", endpoint(), "committed before Heartbeat returns")
	assert.Equal(t, before+1, index(), "Running and the endpoint are one commit")

	before = index()
	for range 10 {
		require.NoError(t, l.Heartbeat(id, tok, running("10.0.0.7:7070")))
		require.NoError(t, l.Heartbeat(id, tok, running("")))
	}
	assert.Equal(t, before, index(), "an unchanged or absent endpoint commits nothing")
	assert.Equal(t, "10.0.0.7:7070", endpoint(), "an absent endpoint keeps the recorded one")

	require.NoError(t, l.Heartbeat(id, tok, running("worker-1.svc:7071")))
	assert.Equal(t, "worker-1.svc:7071", endpoint())
	assert.Equal(t, before+1, index(), "a new endpoint is one commit")

	err := l.Heartbeat(id, tok, running("0.0.0.0:7070"))
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Contains(t, err.Error(), "endpoint")
	assert.Equal(t, "worker-1.svc:7071", endpoint())
}
