package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// A service scaled to 0 over the API is parked: its replicas stop, its
// quota is released, it reads Running with 0 replicas; scaled up it is
// pending, then placed and charged as at submit. A count from 1 to
// minAvailable-1, a batch job, or a spec of 0 replicas is refused.
func TestScaleServiceToZeroAndBack(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1 := e.Tokens["u1"]
	status, body := do(t, e, u1, "POST", "/v1/jobs",
		`{kind: service, command: [true], name: pub, replicas: 2, minAvailable: 2, resources: {accelerators: {type: A100, count: 4}}}`)
	require.Equal(t, http.StatusCreated, status, body)
	id := decode[wire.SubmitResponse](t, body).JobID
	require.Equal(t, []structs.JobID{id}, e.Store.Schedule(t, apitest.T0).Placed)
	for _, tk := range e.Store.Tasks(id) {
		e.Store.Report(t, tk.ID, structs.TaskRunning, apitest.T0)
	}
	usage := func() structs.ResourceList {
		t.Helper()
		status, body := do(t, e, u1, "GET", "/v1/quotas/user:u1", "")
		require.Equal(t, http.StatusOK, status, body)
		return decode[wire.QuotaStatus](t, body).Usage
	}
	assert.Equal(t, structs.ResourceList{"gpu/A100": 8}, usage())

	// Through the CLI's client: 0 is sent, not left out.
	cl := client.New(e.URL(), u1)
	js, err := cl.ScaleService(context.Background(), id, 0)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, js.Job.State)
	assert.Equal(t, state.ParkedReason, js.Job.Reason)
	assert.Equal(t, 0, js.Job.Replicas)
	assert.Equal(t, 2, js.Job.MinAvailable)
	assert.Empty(t, js.Job.Charged)
	require.Len(t, js.Tasks, 2)
	for _, tk := range js.Tasks {
		assert.Equal(t, structs.TaskStopping, tk.State)
		assert.Equal(t, structs.StopScaled, tk.StopReason)
	}
	assert.Empty(t, usage(), "its quota is released at once")
	for _, tk := range js.Tasks {
		e.Store.Report(t, tk.ID, structs.TaskFailed, apitest.T0)
	}
	cr := e.Store.Schedule(t, apitest.T0.Add(48*time.Hour))
	assert.Empty(t, cr.Placed)
	assert.Empty(t, cr.Rejected)
	status, body = do(t, e, u1, "GET", "/v1/jobs/"+string(id)+"/why", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "not pending: the job is Running (scaled to 0 replicas)", decode[wire.WhyResponse](t, body).Message)
	assert.Equal(t, structs.JobRunning, e.Store.Job(id).State, "never failed, lost or timed out")

	status, body = do(t, e, u1, "POST", "/v1/jobs/"+string(id)+"/scale", `{"replicas": 1}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "replicas 1 is below minAvailable 2: scale to 2 or more, or to 0 to park the service")
	status, body = do(t, e, u1, "POST", "/v1/jobs/"+string(id)+"/scale", `{"replicas": 2}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.JobPending, decode[wire.JobStatus](t, body).Job.State)
	assert.Equal(t, structs.ResourceList{"gpu/A100": 8}, usage(), "charged again")
	cr = e.Store.Schedule(t, apitest.T0) // the API's clock: pending since T0
	require.Equal(t, []structs.JobID{id}, cr.Placed)
	live := 0
	for _, tk := range e.Store.Tasks(id) {
		if tk.State == structs.TaskScheduled {
			live++
		}
	}
	assert.Equal(t, 2, live)

	// Batch jobs do not scale; a service is not submitted parked.
	batch := submit(t, e, "u1", "low-1", lowSpec)
	status, body = do(t, e, u1, "POST", "/v1/jobs/"+string(batch)+"/scale", `{"replicas": 0}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "job low-1 is a command job: only services scale (cancel it to stop it)")
	status, body = do(t, e, u1, "POST", "/v1/jobs", `{kind: service, command: [true], name: parked, replicas: 0, resources: {cpu: "1"}}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "replicas 0 is not allowed: submit a service with 1 to 10000, then park it with coordinator service scale ID 0")
}
