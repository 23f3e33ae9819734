package main_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/tlstest"
)

// tlsDevCoordinator is devCoordinator serving HTTPS with a certificate
// from a new CA; its client trusts that CA.
func tlsDevCoordinator(t *testing.T) (*daemon.Daemon, *client.Client) {
	t.Helper()
	tokens, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	f := tlstest.NewCA(t, "atom test CA").Write(t, "dev", "127.0.0.1")
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, Cluster: cluster,
		TLS:    daemon.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	require.True(t, strings.HasPrefix(d.URL, "https://"), d.URL)
	c := client.New(d.URL, adminToken)
	require.NoError(t, c.TrustCA(f.CA))
	return d, c
}

// atom inside a task reaches a coordinator that serves HTTPS: the backend
// passes the CA in ATOM_TLS_CA and atom trusts it. The proof is a report
// only atom makes: a failed preflight, which makes the coordinator
// quarantine the accelerator and place the job again. Without the CA,
// atom's reports are refused by its own TLS check, so nothing is
// quarantined and the job fails on the backend's report of the exit (with
// no file to leave its report in for the backend to send on).
func TestAtomReachesHTTPSCoordinator(t *testing.T) {
	t.Parallel()
	_, c := tlsDevCoordinator(t)
	marker := filepath.Join(t.TempDir(), "ran")
	gpu := map[string]any{"accelerators": map[string]any{"type": "A100", "count": 1}}

	id := submit(t, c, "trusted", gpu, atomBin, "run", "--simulated-gpus=false", "--", "touch", marker)
	job := waitJob(t, c, id)
	assert.Equal(t, structs.JobFailed, job.State)
	assert.Equal(t, state.MaxPreflightRequeues, job.PreflightFailures, "atom's PreflightFailed reports got through: %s", job.Reason)

	id = submit(t, c, "untrusted", gpu, "sh", "-c", `unset ATOM_TLS_CA ATOM_UNSENT_REPORT; exec "$0" run --simulated-gpus=false --report-timeout 1s -- touch "$1"`, atomBin, marker)
	job = waitJob(t, c, id)
	assert.Equal(t, structs.JobFailed, job.State)
	assert.Zero(t, job.PreflightFailures, "no report of atom's got through: %s", job.Reason)
	var logs strings.Builder
	require.NoError(t, c.Logs(context.Background(), id, "", false, &logs))
	assert.Contains(t, logs.String(), "x509: certificate signed by unknown authority")
	assert.NoFileExists(t, marker)
}
