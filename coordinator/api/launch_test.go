package api_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
)

// The launch token atom gives its job lists the job's peers (atom rsh
// needs them) and nothing else: no heartbeat (a job cannot claim a failed
// GPU preflight to quarantine GPUs, or end its own task), no user
// endpoint. A launch token made from a wrong allocation token is nothing.
func TestLaunchTokenOnlyListsPeers(t *testing.T) {
	t.Parallel()
	e, tasks := matrixEnv(t)
	alloc := e.Store.Tokens()[tasks[0].ID]
	launch := structs.LaunchToken(alloc)
	before := e.Store.StateJSON(t)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/v1/tasks/" + string(tasks[0].ID) + "/peers", "", 200},
		{"GET", "/v1/tasks/" + string(tasks[1].ID) + "/peers", "", 200},
		{"POST", "/v1/tasks/" + string(tasks[0].ID) + "/heartbeat", `{"state": "Running"}`, 401},
		{"POST", "/v1/tasks/" + string(tasks[0].ID) + "/heartbeat",
			`{"state": "Failed", "exitCode": 3, "reason": "PreflightFailed", "accelerators": [0]}`, 401},
		{"POST", "/v1/tasks/" + string(tasks[1].ID) + "/heartbeat", `{"state": "Succeeded"}`, 401},
		{"GET", "/v1/jobs", "", 401},
		{"GET", "/v1/jobs/web-1", "", 401},
	} {
		status, body := do(t, e, launch, c.method, c.path, c.body)
		assert.Equal(t, c.want, status, "%s %s: %s", c.method, c.path, body)
	}
	status, _ := do(t, e, structs.LaunchToken("not-"+alloc), "GET", "/v1/tasks/"+string(tasks[0].ID)+"/peers", "")
	assert.Equal(t, 401, status)
	status, _ = do(t, e, structs.LaunchToken(launch), "GET", "/v1/tasks/"+string(tasks[0].ID)+"/peers", "")
	assert.Equal(t, 401, status, "a launch token does not make further launch tokens")
	assert.Equal(t, before, e.Store.StateJSON(t), "nothing changed")
}
