package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func TestHeartbeatEndpointValidation(t *testing.T) {
	t.Parallel()
	e, tasks := matrixEnv(t)
	id, tok := tasks[0].ID, e.Store.Tokens()[tasks[0].ID]
	path := "/v1/tasks/" + string(id) + "/heartbeat"
	before := e.Store.StateJSON(t)
	for body, want := range map[string]string{
		`{"state": "Running", "endpoint": "10.0.0.7"}`:      `endpoint "10.0.0.7" is not allowed: use host:port`,
		`{"state": "Running", "endpoint": "10.0.0.7:0"}`:    `endpoint "10.0.0.7:0" is not allowed: use host:port with port 1-65535`,
		`{"state": "Running", "endpoint": "a_b:70"}`:        `endpoint "a_b:70" is not allowed`,
		`{"state": "Running", "endpoint": "0.0.0.0:7070"}`:  `not the unspecified address`,
		`{"endpoint": "10.0.0.7:7070"}`:                     `endpoint is only allowed with state Running`,
		`{"state": "Failed", "endpoint": "10.0.0.7:7070"}`:  `endpoint is only allowed with state Running`,
		`{"state": "Running", "endpoint": 7070}`:            `endpoint`,
		`{"state": "Running", "endpoint": "h:1", "x": "y"}`: `unknown field "x"`,
	} {
		status, resp := do(t, e, tok, "POST", path, body)
		assert.Equal(t, http.StatusBadRequest, status, body)
		assert.Contains(t, errMsg(t, resp), want, body)
	}
	assert.Equal(t, before, e.Store.StateJSON(t), "refused heartbeats change nothing")
}

// Peers lists the live tasks of the job's current attempt with their
// endpoints; tokens and tasks of an earlier attempt are refused (C04).
func TestPeersCurrentAttemptOnly(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "mpi-1", `{kind: command, command: [true], name: mpi, priority: low, replicas: 2, restartPolicy: OnFailure, resources: {cpu: "1", memory: 1Gi}}`)
	e.Store.Schedule(t, apitest.T0)
	old := e.Store.Tasks("mpi-1")
	require.Len(t, old, 2)
	oldTok := e.Store.Tokens()
	hb := func(task structs.TaskID, tok, body string) {
		t.Helper()
		status, resp := do(t, e, tok, "POST", "/v1/tasks/"+string(task)+"/heartbeat", body)
		require.Equal(t, http.StatusOK, status, resp)
	}
	peers := func(task structs.TaskID, tok string) (int, string) {
		return do(t, e, tok, "GET", "/v1/tasks/"+string(task)+"/peers", "")
	}
	hb(old[0].ID, oldTok[old[0].ID], `{"state": "Running", "endpoint": "10.0.0.1:7070"}`)
	hb(old[1].ID, oldTok[old[1].ID], `{"state": "Running", "endpoint": "[fd00::2]:7070"}`)
	status, body := peers(old[0].ID, oldTok[old[1].ID])
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.PeerList{Job: "mpi-1", Peers: []wire.Peer{
		{Task: old[0].ID, Index: 0, Node: old[0].Node, State: structs.TaskRunning, Endpoint: "10.0.0.1:7070"},
		{Task: old[1].ID, Index: 1, Node: old[1].Node, State: structs.TaskRunning, Endpoint: "[fd00::2]:7070"},
	}}, decode[wire.PeerList](t, body))

	// Replica 1 fails: replica 0 is stopped, then the job starts attempt 1.
	hb(old[1].ID, oldTok[old[1].ID], `{"state": "Failed", "exitCode": 1}`)
	status, body = peers(old[0].ID, oldTok[old[1].ID])
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, errMsg(t, body), "has ended (Failed)", "an ended task's token is refused at once")
	hb(old[0].ID, oldTok[old[0].ID], `{"state": "Failed", "exitCode": 143}`)
	require.Equal(t, 1, e.Store.Job("mpi-1").Attempt)
	e.Store.Schedule(t, apitest.T0)
	var cur []*structs.Task
	for _, x := range e.Store.Tasks("mpi-1") {
		if x.Attempt == 1 {
			cur = append(cur, x)
		}
	}
	require.Len(t, cur, 2)
	tok := e.Store.Tokens()
	hb(cur[1].ID, tok[cur[1].ID], `{"state": "Running", "endpoint": "10.0.0.3:7070"}`)

	status, body = peers(cur[0].ID, tok[cur[1].ID])
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.PeerList{Job: "mpi-1", Attempt: 1, Peers: []wire.Peer{
		{Task: cur[0].ID, Index: 0, Node: cur[0].Node, State: structs.TaskScheduled},
		{Task: cur[1].ID, Index: 1, Node: cur[1].Node, State: structs.TaskRunning, Endpoint: "10.0.0.3:7070"},
	}}, decode[wire.PeerList](t, body), "only attempt 1, and no endpoint before its agent reports one")

	for name, c := range map[string]struct {
		task  structs.TaskID
		tok   string
		ended structs.TaskState // replica 0 was stopped; replica 1 failed
	}{
		"old token, current task": {cur[0].ID, oldTok[old[0].ID], structs.TaskStopped},
		"old token, own old task": {old[0].ID, oldTok[old[0].ID], structs.TaskStopped},
		"current token, old task": {old[1].ID, tok[cur[0].ID], structs.TaskFailed},
	} {
		status, body := peers(c.task, c.tok)
		assert.Equal(t, http.StatusForbidden, status, name)
		assert.Contains(t, errMsg(t, body), "has ended ("+string(c.ended)+"): only live tasks of job mpi-1's current attempt", name)
	}
}
