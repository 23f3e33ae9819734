package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
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

// gate stands in front of a coordinator's API and holds each of the
// CLI's polls of job id (GET /v1/jobs/ID) until the test lets it through,
// so the test changes the job between two polls and knows what each one
// saw.
type gate struct {
	arrived, release chan struct{}
}

func newGate(t *testing.T, e *apitest.Env, id string) (*gate, string) {
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	target, err := url.Parse(e.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/jobs/"+id {
			g.arrived <- struct{}{}
			<-g.release
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// poll waits for the CLI's next poll of the job, changes the job with
// change, then lets the poll through. The CLI has done with what a poll
// saw once its next one arrives.
func (g *gate) poll(change func()) {
	<-g.arrived
	change()
	g.release <- struct{}{}
}

// TestSubmitWaitSaysWhatChanged: submit --wait printed the restart
// back-off's why on every poll, its countdown the only change, and
// nothing when a restart came and went between two polls. Now it prints
// a line when the job's state, reason or attempt changes, and a why once
// per reason.
func TestSubmitWaitSaysWhatChanged(t *testing.T) {
	e := apitest.NewEnv(t, "")
	const id = "flaky-00001"
	g, addr := newGate(t, e, id)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		done <- app.RunContext(context.Background(), []string{"coordinator", "--addr", addr, "--token", e.Tokens["u1"], "job", "submit", "-f",
			file(t, `{kind: command, name: flaky, restartPolicy: OnFailure, command: [x], resources: {cpu: "1", memory: 1Gi}}`), "--wait", "--interval", "1ms"})
	}()
	at := func(d time.Duration) time.Time { return apitest.T0.Add(d) }
	fail := func(task structs.TaskID, now time.Time) {
		e.Store.Schedule(t, now)
		e.Store.Report(t, task, structs.TaskRunning, now)
		e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: task, State: structs.TaskFailed, ExitCode: 1, Time: now}}})
	}
	g.poll(func() {})                                                                                      // Pending, not looked at yet
	g.poll(func() { fail(id+"-0-a0", at(0)) })                                                             // attempt 2, placed at once
	g.poll(func() { fail(id+"-0-a1", at(time.Minute)); e.Store.Schedule(t, at(time.Minute+time.Second)) }) // attempt 3, back-off 10 s
	g.poll(func() { e.Store.Schedule(t, at(time.Minute+2*time.Second)) })                                  // the countdown only
	g.poll(func() { e.Store.Schedule(t, at(time.Minute+5*time.Second)) })                                  // the countdown only
	g.poll(func() {
		fail(id+"-0-a2", at(time.Minute+10*time.Second))
		e.Store.Schedule(t, at(time.Minute+11*time.Second))
	}) // attempt 4
	g.poll(func() { fail(id+"-0-a3", at(time.Minute+31*time.Second)) }) // no restart left
	err := <-done
	require.Error(t, err)
	assert.Equal(t, "job flaky-00001 failed: replica 0 failed with exit code 1 (no restarts left: 3 of 3 used)", err.Error())
	assert.Equal(t, ""+
		"job flaky-00001 submitted: Pending\n"+
		"2026-03-01 09:03:12  Pending\n"+
		"2026-03-01 09:03:12    why: pending: the scheduler has not looked at this job yet\n"+
		"2026-03-01 09:03:12  Pending (attempt 2): restart 1 of 3: replica 0 failed with exit code 1\n"+
		"2026-03-01 09:03:12    why: pending (restart 1 of 3: replica 0 failed with exit code 1): the scheduler has not looked at this job since\n"+
		"2026-03-01 09:03:12  Pending (attempt 3): restart 2 of 3: replica 0 failed with exit code 1\n"+
		"2026-03-01 09:03:12    why: restart back-off: attempt 3 (restart 2 of 3) waits until 2026-03-01T09:01:10Z (in 9s)\n"+
		"2026-03-01 09:03:12  Pending (attempt 4): restart 3 of 3: replica 0 failed with exit code 1\n"+
		"2026-03-01 09:03:12    why: restart back-off: attempt 4 (restart 3 of 3) waits until 2026-03-01T09:01:30Z (in 19s)\n"+
		"2026-03-01 09:03:12  Failed: replica 0 failed with exit code 1 (no restarts left: 3 of 3 used)\n",
		out.String())
}
