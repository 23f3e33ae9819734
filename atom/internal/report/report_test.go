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
	"github.com/atom-sched/atom/coordinator/api/wire"
	"github.com/atom-sched/atom/pkg/structs"
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
