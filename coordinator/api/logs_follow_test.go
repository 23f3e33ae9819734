package api_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestFollowWaitsForTheFirstOutput: following a task placed but not
// started yet (no output file) waits for its output and streams it until
// the task ends; it answered "(no output kept ...)" at once (found by a
// new user running job logs -f right after job submit). A task that ends
// without output still ends the stream with that line.
func TestFollowWaitsForTheFirstOutput(t *testing.T) {
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(`{kind: command, name: late, command: [run], resources: {cpu: "1"}}`))
	require.NoError(t, err)
	for _, id := range []structs.JobID{"late-1", "mute-1"} {
		j, err := s.ToJob("u1")
		require.NoError(t, err)
		j.ID, j.Name = id, string(id)
		store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	}
	store.Schedule(t, apitest.T0)
	late, mute := store.Tasks("late-1")[0], store.Tasks("mute-1")[0]
	var asked atomic.Int64
	var started atomic.Bool
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			asked.Add(1)
			if id == late.ID && started.Load() {
				return stream([]byte("started\n")), nil
			}
			return nil, fs.ErrNotExist
		}}))
	t.Cleanup(srv.Close)
	follow := func(job structs.JobID, task structs.TaskID) <-chan string {
		out := make(chan string, 1)
		go func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/v1/jobs/"+string(job)+"/logs?follow=true&task="+string(task), nil)
			req.Header.Set("Authorization", "Bearer "+logsToken)
			resp, err := srv.Client().Do(req)
			if err != nil {
				out <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- string(b)
		}()
		return out
	}

	got := follow("late-1", late.ID)
	require.Eventually(t, func() bool { return asked.Load() >= 2 }, 10*time.Second, 10*time.Millisecond, "asked again while there is no output")
	started.Store(true)
	before := asked.Load()
	require.Eventually(t, func() bool { return asked.Load() > before }, 10*time.Second, 10*time.Millisecond)
	store.Report(t, late.ID, structs.TaskSucceeded, apitest.T0)
	select {
	case body := <-got:
		assert.Equal(t, "started\n", body)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with the task")
	}

	got = follow("mute-1", mute.ID)
	require.Eventually(t, func() bool { return asked.Load() > before+2 }, 10*time.Second, 10*time.Millisecond)
	store.Report(t, mute.ID, structs.TaskSucceeded, apitest.T0)
	select {
	case body := <-got:
		assert.Equal(t, "(no output kept: the server that ran it is down, or it wrote none)\n", body)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with the task")
	}
}
