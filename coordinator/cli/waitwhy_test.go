package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// submit --wait asks why a Pending job waits; when the job has started
// between the two requests, the answer ("not pending: the job is
// Running") is not printed as a why: the next poll shows Running.
func TestSubmitWaitSaysNoWhyOnceTheJobMovedOn(t *testing.T) {
	var polls atomic.Int32
	job := func(s structs.JobState) *structs.Job {
		return &structs.Job{ID: "j-1", Name: "j", Kind: structs.KindCommand, Replicas: 1, State: s}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var out any
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			out = wire.SubmitResponse{JobID: "j-1", Job: job(structs.JobPending)}
		case r.URL.Path == "/v1/jobs/j-1/why": // asked after the first poll: the job has started since
			out = wire.WhyResponse{Job: "j-1", State: structs.JobRunning, Message: "not pending: the job is Running"}
		case r.URL.Path == "/v1/jobs/j-1":
			s := structs.JobPending
			if polls.Add(1) > 1 {
				s = structs.JobRunning
			}
			out = wire.JobStatus{Job: job(s)}
		default:
			http.NotFound(w, r)
			return
		}
		assert.NoError(t, json.NewEncoder(w).Encode(out))
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	app := App()
	app.Writer = &out
	err := app.Run([]string{"coordinator", "--addr", srv.URL, "--token", "t", "job", "submit", "-f",
		file(t, `{kind: command, name: j, command: [x], resources: {cpu: "1"}}`), "--wait", "--interval", "1ms"})
	require.NoError(t, err, out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	assert.Equal(t, "job j-1 submitted: Pending", lines[0])
	assert.True(t, strings.HasSuffix(lines[1], "  Pending"), lines[1])
	assert.True(t, strings.HasSuffix(lines[2], "  Running"), lines[2])
}
