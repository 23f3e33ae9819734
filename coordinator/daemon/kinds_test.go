package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestUnknownKindRefused: a job of a kind no task has a plugin for (a
// typo: batch) and a command job without its command were accepted and
// then failed in every task (exit 4). Now they are refused at submit,
// saying what is allowed: the built-ins, --plugin-dir's plugins (read
// at each submit) and --job-kind's.
func TestUnknownKindRefused(t *testing.T) {
	plugins := t.TempDir()
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens(t), Cluster: cluster, Logger: quiet(),
		PluginDir: plugins, JobKinds: []structs.JobKind{"ray"}}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	<-d.Seeded()
	c := client.New(d.URL, adminToken)
	ctx := context.Background()
	submit := func(spec string) error {
		_, err := c.SubmitJob(ctx, []byte(spec+"\nresources: {cpu: 1, memory: 1Gi}\n"), "")
		return err
	}

	err = submit("kind: batch\nname: typo\ncommand: [true]")
	assert.ErrorContains(t, err, `kind "batch" is not allowed: use mpi, spark, service or command, or a plugin's kind (this coordinator's are ray)`)
	err = submit("kind: command\nname: nocmd\nargs: [-v]")
	assert.ErrorContains(t, err, "command is required for kind command")
	require.NoError(t, submit("kind: ray\nname: tune"))

	require.NoError(t, os.WriteFile(filepath.Join(plugins, "atom-plugin-batch"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, submit("kind: batch\nname: typo\ncommand: [true]"), "a plugin added while the coordinator runs")
	jobs, err := c.ListJobs(ctx, client.JobFilter{})
	require.NoError(t, err)
	assert.Len(t, jobs, 2, "the refused made nothing")
}
