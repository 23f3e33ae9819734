package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
)

// A coordinator that takes the connection and never answers (a paused
// server) fails the call after Timeout, retries included, saying so; it
// used to hang the CLI for as long as the server was paused.
func TestTimeoutBoundsACall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := client.New(srv.URL, "tok")
	c.Timeout = 300 * time.Millisecond
	_, err := c.ListJobs(context.Background(), client.JobFilter{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "coordinator "+srv.URL+" did not answer GET /v1/jobs within 300ms (raise it with --timeout)")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
