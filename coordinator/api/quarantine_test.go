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

// atom's PreflightFailed report quarantines the accelerators and requeues
// the job; the node shows them until an admin releases them.
func TestPreflightQuarantineAndRelease(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "gpu-1", `{kind: command, command: [true], name: gpu, resources: {accelerators: {type: A100, count: 2}}}`)
	e.Store.Schedule(t, apitest.T0)
	tasks := e.Store.Tasks("gpu-1")
	require.Len(t, tasks, 1)
	tk := tasks[0]
	require.Equal(t, []int{0, 1}, tk.Accels.Indices())
	status, body := do(t, e, e.Store.Tokens()[tk.ID], "POST", "/v1/tasks/"+string(tk.ID)+"/heartbeat",
		`{"state": "Failed", "exitCode": 3, "reason": "PreflightFailed", "accelerators": [1], "message": "gpu preflight failed: ecc: GPU 1 (GPU-b) has 2 uncorrectable ECC errors"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.TaskFailed, decode[wire.HeartbeatResponse](t, body).State)
	job := e.Store.Job("gpu-1")
	assert.Equal(t, structs.JobPending, job.State)
	assert.Equal(t, "requeued: accelerator 1 of node "+string(tk.Node)+" failed preflight: gpu preflight failed: ecc: GPU 1 (GPU-b) has 2 uncorrectable ECC errors", job.Reason)

	path := "/v1/nodes/" + string(tk.Node)
	status, body = do(t, e, e.Tokens["u2"], "GET", path, "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, []structs.Quarantine{{Accel: 1, Reason: "gpu preflight failed: ecc: GPU 1 (GPU-b) has 2 uncorrectable ECC errors", Since: apitest.T0, Task: tk.ID}},
		decode[wire.NodeStatus](t, body).Quarantined, "users see quarantines")
	e.Store.Schedule(t, apitest.T0)
	for _, x := range e.Store.Tasks("gpu-1") {
		if x.State.HoldsResources() && x.Node == tk.Node {
			assert.Zero(t, x.Accels&(1<<1), "not placed on the quarantined accelerator")
		}
	}

	status, body = do(t, e, e.Tokens["admin"], "POST", path+"/release", `{}`)
	require.Equal(t, http.StatusOK, status, body)
	rr := decode[wire.ReleaseResponse](t, body)
	assert.Equal(t, []int{1}, rr.Released)
	assert.Equal(t, []int{}, rr.Quarantined)
	assert.Empty(t, rr.Node.Quarantined)
	assert.Equal(t, tk.Node, rr.Node.Name)
}
