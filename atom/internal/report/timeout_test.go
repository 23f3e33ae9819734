package report_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/report"
)

// A server that takes the connection but does not answer (a paused
// coordinator) costs one heartbeat period, not 10 s: the next server
// gets the beat well within the heartbeat TTL of three periods (found by
// make chaos, where a follower paused with SIGSTOP made the leader
// declare healthy tasks lost).
func TestHungServerCostsOnePeriod(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	got := make(chan time.Time, 16)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- time.Now()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"task": "t-0-a", "state": "Running"}`))
	}))
	t.Cleanup(good.Close)
	const every = time.Second
	r := report.New(hung.URL+","+good.URL, "t-0-a", "tok", every, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	start := time.Now()
	go func() { _ = r.Run(ctx) }()
	select {
	case at := <-got:
		require.Less(t, at.Sub(start), 2*every, "the next server got the beat after one period")
	case <-time.After(3 * every): // the heartbeat TTL
		t.Fatal("no beat reached the answering server within the heartbeat TTL")
	}
}
