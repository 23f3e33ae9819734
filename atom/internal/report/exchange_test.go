package report_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/pkg/wire"
)

// ExchangeToken waits out a coordinator that is away (503, 429, no
// answer), reading the token file again for every try (the kubelet
// renews it), and returns the allocation token and the environment that
// came with it; test/k8s/kubebackend
// (TestTokenExchange) runs it against a real coordinator and API server.
func TestExchangeTokenRetries(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("jwt-1\n"), 0o600))
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "POST", r.Method)
		assert.Equal(t, "/v1/tasks/t-0-a/token", r.URL.Path)
		var req wire.TaskTokenRequest
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		mu.Lock()
		got = append(got, req.ServiceAccountToken)
		n := len(got)
		mu.Unlock()
		switch n {
		case 1:
			require.NoError(t, os.WriteFile(file, []byte("jwt-2"), 0o600)) // renewed
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error": "no leader: retry"}`)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error": "too many token exchanges at once: retry in a second"}`)
		default:
			_ = json.NewEncoder(w).Encode(wire.TaskToken{Task: "t-0-a", Token: "alloc-token", Env: map[string]string{"ATOM_JOB_ID": "t"}})
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first server is gone: the next one is tried.
	tok, err := report.ExchangeToken(ctx, "http://127.0.0.1:1,"+srv.URL, "t-0-a", file, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Equal(t, "alloc-token", tok.Token)
	assert.Equal(t, map[string]string{"ATOM_JOB_ID": "t"}, tok.Env, "with the task's environment")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"jwt-1", "jwt-2", "jwt-2"}, got)
}

// A refusal ends the exchange at once, with the coordinator's message.
func TestExchangeTokenRefused(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("jwt"), 0o600))
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error": "the token is bound to Pod ns/b, not to task t-0-a's Pod t-0-a"}`)
	}))
	t.Cleanup(srv.Close)
	_, err := report.ExchangeToken(context.Background(), srv.URL, "t-0-a", file, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "the coordinator refused this Pod's service-account token (403): the token is bound to Pod ns/b, not to task t-0-a's Pod t-0-a")
	assert.Equal(t, 1, calls)

	_, err = report.ExchangeToken(context.Background(), srv.URL, "t-0-a", filepath.Join(t.TempDir(), "none"), slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "read the Pod's service-account token: open ")
}
