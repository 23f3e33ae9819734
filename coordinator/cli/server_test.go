package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/coordinator/daemon"
)

// serverConfig parses the server flags in args as `coordinator dev` does,
// over its embedded cluster, and returns the daemon config.
func serverConfig(t *testing.T, args ...string) (daemon.Config, error) {
	t.Helper()
	var cfg daemon.Config
	var out bytes.Buffer
	app := &cli.App{Name: "coordinator", Flags: commonServerFlags(), Writer: &out, ErrWriter: &out,
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			var err error
			if cfg, err = daemonConfig(c); err != nil {
				return err
			}
			if cfg.Cluster, err = daemon.DevCluster(); err != nil {
				return err
			}
			cfg.GPUFaults, err = gpuFaults(c, cfg.Cluster)
			return err
		}}
	err := app.RunContext(context.Background(), append([]string{"coordinator"}, args...))
	return cfg, err
}

func TestSimulatedGPUFaults(t *testing.T) {
	cfg, err := serverConfig(t,
		"--simulated-gpu-fault", "a100-1=0:ecc",
		"--simulated-gpu-fault", "v100-1=0:ecc,3:retired-pages", // the flag's comma splitting is undone
		"--simulated-gpu-fault", "a100-1=7:retired-pages")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a100-1": "0:ecc,7:retired-pages", "v100-1": "0:ecc,3:retired-pages"}, cfg.GPUFaults)

	cfg, err = serverConfig(t)
	require.NoError(t, err)
	assert.Empty(t, cfg.GPUFaults)
}

// TestSimulatedGPUFaultsRefused: a fault atom could not place is refused at
// start-up, naming the value and what is allowed.
func TestSimulatedGPUFaultsRefused(t *testing.T) {
	for _, tc := range []struct{ value, msg string }{
		{"a100-1=0:foo", `--simulated-gpu-fault "a100-1=0:foo": fault kind "foo" is not allowed: use ecc or retired-pages`},
		{"nosuch=0:ecc", `--simulated-gpu-fault "nosuch=0:ecc": the cluster config has no node nosuch: use a node with accelerators: a100-1 (0-7), a100-2 (0-7), perception-a100-1 (0-7), v100-1 (0-3)`},
		{"a100-1=9:ecc", `--simulated-gpu-fault "a100-1=9:ecc": node a100-1 has 8 accelerators: use an index from 0 to 7`},
		{"v100-1=0:ecc,4:ecc", `--simulated-gpu-fault "v100-1=0:ecc,4:ecc": node v100-1 has 4 accelerators: use an index from 0 to 3`},
		{"cpu-1=0:ecc", `--simulated-gpu-fault "cpu-1=0:ecc": node cpu-1 has no accelerators: use a node with accelerators: a100-1 (0-7), a100-2 (0-7), perception-a100-1 (0-7), v100-1 (0-3)`},
		{"a100-1=-1:ecc", `--simulated-gpu-fault "a100-1=-1:ecc": accelerator index "-1" is not allowed: use a whole number from 0`},
		{"a100-1=+1:ecc", `--simulated-gpu-fault "a100-1=+1:ecc": accelerator index "+1" is not allowed: use a whole number from 0`},
		{"a100-1=x:ecc", `--simulated-gpu-fault "a100-1=x:ecc": accelerator index "x" is not allowed: use a whole number from 0`},
		{"a100-1=0:ecc,0:retired-pages", `--simulated-gpu-fault "a100-1=0:ecc,0:retired-pages": accelerator 0 of node a100-1 has a fault already: give each accelerator one`},
		{"a100-1=0", `--simulated-gpu-fault "a100-1=0": "0" is not INDEX:KIND: ` + faultUsage},
		{"0:ecc", `--simulated-gpu-fault "0:ecc": ` + faultUsage},
		{"=0:ecc", `--simulated-gpu-fault "=0:ecc": ` + faultUsage},
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, err := serverConfig(t, "--simulated-gpu-fault", tc.value)
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error())
			assert.Equal(t, 2, ExitCode(err))
		})
	}
	_, err := serverConfig(t, "--real-gpus", "--simulated-gpu-fault", "a100-1=0:ecc")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--simulated-gpu-fault needs simulated GPUs: leave out --real-gpus")
}

// TestServerCommandsCheckGPUFaults: dev checks faults against its embedded
// cluster, server against --cluster-config, before anything starts.
func TestServerCommandsCheckGPUFaults(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	require.NoError(t, os.WriteFile(cluster, []byte("clusters: [{name: local}]\nnodes: [{name: g1, cpu: 8, memory: 64Gi, accelerators: {type: A100, count: 2}}]\n"), 0o600))
	for _, args := range [][]string{
		{"dev", "--data-dir", filepath.Join(dir, "dev"), "--simulated-gpu-fault", "nosuch=0:ecc"},
		{"server", "--id", "s1", "--bootstrap", "--data-dir", filepath.Join(dir, "s1"), "--tokens", filepath.Join(dir, "tokens.yaml"),
			"--cluster-config", cluster, "--simulated-gpu-fault", "nosuch=0:ecc"},
	} {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		err := app.RunContext(context.Background(), append([]string{"coordinator"}, args...))
		require.Error(t, err, args[0])
		assert.Contains(t, err.Error(), `--simulated-gpu-fault "nosuch=0:ecc": the cluster config has no node nosuch`, args[0])
	}
	_, err := os.Stat(filepath.Join(dir, "s1", "raft.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing started")
}

func TestPluginDirFlag(t *testing.T) {
	t.Setenv("ATOM_PLUGIN_DIR", "/opt/from-env")
	cfg, err := serverConfig(t)
	require.NoError(t, err)
	assert.Equal(t, "/opt/from-env", cfg.PluginDir, "the default is the coordinator's ATOM_PLUGIN_DIR")

	cfg, err = serverConfig(t, "--plugin-dir", "plugins")
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "plugins"), cfg.PluginDir, "relative to the coordinator's directory, not the task's")

	t.Setenv("ATOM_PLUGIN_DIR", "")
	cfg, err = serverConfig(t)
	require.NoError(t, err)
	assert.Empty(t, cfg.PluginDir)
}

func TestJobKindFlag(t *testing.T) {
	cfg, err := serverConfig(t, "--job-kind", "ray", "--job-kind", "horovod")
	require.NoError(t, err)
	assert.Equal(t, []structs.JobKind{"ray", "horovod"}, cfg.JobKinds)
	_, err = serverConfig(t, "--job-kind", "Ray")
	assert.ErrorContains(t, err, `--job-kind "Ray": use a job kind (a DNS-1035 label: lowercase, starting with a letter)`)
}
