package report_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// SetEndpoint makes Run beat at once, and every later Running beat
// carries the endpoint.
func TestSetEndpoint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var beats []wire.Heartbeat
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hb wire.Heartbeat
		if assert.NoError(t, json.NewDecoder(r.Body).Decode(&hb)) {
			mu.Lock()
			beats = append(beats, hb)
			mu.Unlock()
		}
		_ = json.NewEncoder(w).Encode(wire.HeartbeatResponse{Task: "t-0-a", State: structs.TaskRunning})
	}))
	t.Cleanup(srv.Close)
	got := func() []wire.Heartbeat {
		mu.Lock()
		defer mu.Unlock()
		return append([]wire.Heartbeat(nil), beats...)
	}

	r := report.New(srv.URL, "t-0-a", "tok", time.Hour, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, func() bool { return len(got()) == 1 }, 10*time.Second, time.Millisecond)
	assert.Empty(t, got()[0].Endpoint)

	r.SetEndpoint("10.0.0.7:7070") // the period is an hour: only the kick beats
	require.Eventually(t, func() bool { return len(got()) == 2 }, 10*time.Second, time.Millisecond)
	b := got()[1]
	assert.Equal(t, structs.TaskRunning, b.State)
	assert.Equal(t, "10.0.0.7:7070", b.Endpoint)
	assert.Equal(t, "10.0.0.7:7070", r.Endpoint())
	cancel()
	require.NoError(t, <-done)
}

// A coordinator that keeps refusing the task's token does not know the
// task: after MaxRefusals beats in a row atom stops the job, so it cannot
// run on beside whatever replaced it. An outage in between starts the
// count again.
func TestRefusedTokenStopsTheJob(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 3 { // an outage after two refusals
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"the token is not an allocation token of task t-0-a"}`))
	}))
	t.Cleanup(srv.Close)
	r := report.New(srv.URL, "t-0-a", "tok", time.Millisecond, slog.New(slog.DiscardHandler))
	err := r.Run(context.Background())
	var se *report.StopError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Reason, "the coordinator refused this task's token 10 times in a row")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 3+report.MaxRefusals, n, "2 refusals, an outage, then 10 refusals")
}

// With StopAfterDisconnect, atom stops the job once no server has
// answered for that long: a server that answers 503 (an election) is
// still there; one that refuses connections is gone.
func TestStopAfterDisconnect(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n, last := 0, time.Time{} // answers, and when the last one went
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		// An answer counts once it is sent: srv.Close can cut the
		// connection of a request whose handler then runs, and the
		// reporter never gets that answer.
		if err := http.NewResponseController(w).Flush(); err != nil {
			return
		}
		mu.Lock()
		n, last = n+1, time.Now()
		mu.Unlock()
	}))
	hits := func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	const after = 300 * time.Millisecond
	r := report.New(srv.URL, "t-0-a", "tok", 10*time.Millisecond, slog.New(slog.DiscardHandler))
	r.StopAfterDisconnect = after
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	start := time.Now()
	require.Eventually(t, func() bool { return hits() >= 10 && time.Since(start) > 2*after }, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("a server answering 503 stopped the job: %v", err)
	default:
	}
	srv.Close() // connections refused from now on
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job runs on with no server left")
	}
	mu.Lock()
	assert.GreaterOrEqual(t, time.Since(last), after, "not before no server answered for StopAfterDisconnect")
	mu.Unlock()
	var se *report.StopError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Disconnected)
	assert.Regexp(t, `^no coordinator server answered a heartbeat for 300ms \(the servers are gone\): .*connection refused`, se.Error())
}
