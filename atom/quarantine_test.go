package main_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestPreflightFaultMovesJob: end to end through a real coordinator and a
// real atom. Node bad's only A100 has an (injected, simulated) ECC error;
// best fit puts a one-GPU job there first. atom's preflight finds the
// error and reports it; the coordinator quarantines that accelerator and
// places the job on node good, where it runs and succeeds. Neither a
// restart nor a preemption is counted.
func TestPreflightFaultMovesJob(t *testing.T) {
	t.Parallel()
	tokens, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cluster, err := structs.ParseClusterConfig([]byte(`
clusters: [{name: local, backend: local}]
nodes:
  - {name: bad, cpu: "8", memory: 16Gi, accelerators: {type: A100, count: 1}}
  - {name: good, cpu: "16", memory: 32Gi, accelerators: {type: A100, count: 2}}
quotas:
  - {scope: "user:dev", limits: {gpu/A100: 2}}
`))
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, Cluster: cluster,
		GPUFaults: map[string]string{"bad": "0:ecc"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	c := client.New(d.URL, adminToken)
	ctx := context.Background()

	rec := newRecorder(t, d.URL)
	marker := filepath.Join(t.TempDir(), "ran")
	id := submit(t, c, "train", map[string]any{"accelerators": map[string]any{"type": "A100", "count": 1}},
		atomBin, "run", "--coordinator", rec.URL, "--heartbeat", "100ms", "--", "sh", "-c", `echo "$ATOM_NODE" > `+marker)
	job := waitJob(t, c, id)
	assert.Equal(t, structs.JobSucceeded, job.State, job.Reason)
	assert.Equal(t, 1, job.Attempt)
	assert.Equal(t, 1, job.PreflightFailures)
	assert.Zero(t, job.Preemptions)
	assert.FileExists(t, marker)

	st, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 2)
	first, second := st.Tasks[0], st.Tasks[1]
	assert.Equal(t, structs.NodeID("bad"), first.Node, "best fit tried the faulty node first")
	assert.Equal(t, structs.TaskFailed, first.State)
	assert.Equal(t, 3, first.ExitCode)
	assert.Equal(t, structs.NodeID("good"), second.Node, "placed elsewhere")
	assert.Equal(t, structs.TaskSucceeded, second.State)
	beats := rec.Beats()
	require.NotEmpty(t, beats)
	assert.Equal(t, beat{State: structs.TaskFailed, Exit: 3, Status: http.StatusOK}, beats[0], "atom reported the failed preflight")

	bad, err := c.Node(ctx, "bad")
	require.NoError(t, err)
	assert.Equal(t, []structs.Quarantine{{Accel: 0, Reason: "gpu preflight failed: ecc: GPU 0 (GPU-sim-bad-0) has 1 uncorrectable ECC errors",
		Since: bad.Quarantined[0].Since, Task: first.ID}}, bad.Quarantined)
	good, err := c.Node(ctx, "good")
	require.NoError(t, err)
	assert.Empty(t, good.Quarantined)

	// Once the hardware is fixed, an admin returns the accelerator.
	res, err := c.ReleaseNode(ctx, "bad", []int{0})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, res.Released)
	assert.Empty(t, res.Node.Quarantined)
}
