package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/plugins/spark"
)

// atom gpus --spark prints Spark's resource JSON for the task's GPUs: the
// ordinals the job's CUDA sees, 0 to n-1, after the preflight's checks;
// and so does the discovery script the spark job type writes, run as
// Spark runs it (by its path, no arguments).
func TestGPUsForSpark(t *testing.T) {
	t.Parallel()
	sim := []string{"ATOM_SIMULATED_GPUS=true", "ATOM_NODE=a100-1", "ATOM_ACCEL_TYPE=A100", "ATOM_ACCELERATORS=4,5"}
	code, out := exitCode(t, atomCmd(t, sim, "gpus", "--spark"))
	assert.Equal(t, 0, code, out)
	assert.Equal(t, `{"name":"gpu","addresses":["0","1"]}`+"\n", out)
	code, out = exitCode(t, atomCmd(t, sim, "gpus"))
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "0\t4\tGPU-sim-a100-1-4\tSimulated A100\n1\t5\tGPU-sim-a100-1-5\tSimulated A100\n", out)

	script := spark.DiscoveryScriptPath(t.TempDir(), "clean-x-0-a0")
	require.NoError(t, spark.WriteDiscoveryScript(script, atomBin))
	cmd := exec.Command(script)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, sim...)
	code, out = exitCode(t, cmd)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, `{"name":"gpu","addresses":["0","1"]}`+"\n", out)

	code, out = exitCode(t, atomCmd(t, nil, "gpus", "--spark"))
	assert.Equal(t, 0, code, out)
	assert.Equal(t, `{"name":"gpu","addresses":[]}`+"\n", out, "no GPUs allocated, none named")

	// A GPU that fails the check is not handed to Spark: exit 3, why.
	code, out = exitCode(t, atomCmd(t, append(sim, "ATOM_SIMULATED_GPU_FAULTS=5:ecc"), "gpus", "--spark"))
	assert.Equal(t, 3, code)
	assert.Equal(t, "atom: gpu preflight failed: ecc: GPU 5 (GPU-sim-a100-1-5) has 1 uncorrectable ECC errors\n", out)
	code, out = exitCode(t, atomCmd(t, []string{"ATOM_ACCEL_TYPE=A100", "ATOM_ACCELERATORS=0"}, "gpus", "--spark"))
	assert.Equal(t, 3, code)
	assert.Equal(t, "atom: gpu preflight failed: nvml: accelerators allocated but NVML is not available (1 A100 allocated)\n", out,
		"real GPUs are NVML's: none on this machine")
}

// A spark job's driver on the local backend, under a coordinator: atom's
// job type finds spark-submit on the job's PATH and notes that executors
// do not apply, in the task's log; a driver that fails ends its task
// with its exit code and the line that says why (here a Python traceback
// on stdout, as PySpark's driver writes it), not the rest of its output;
// a missing spark-submit says so in a line.
func TestSparkDriverFailureReason(t *testing.T) {
	t.Parallel()
	_, c := devCoordinator(t)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "spark-submit"), []byte("#!/bin/sh\n"+
		"echo \"26/12/03 11:27:21 INFO SparkContext: Running Spark version 4.3.0 ($*)\" >&2\n"+
		"printf 'Traceback (most recent call last):\\n  File \"/a.py\", line 3, in <module>\\n    1/0\\nZeroDivisionError: division by zero\\n'\n"+
		"exit 1\n"), 0o755))
	job, err := json.Marshal(structs.Job{ID: "clean-x", Name: "clean", Kind: structs.KindSpark,
		Resources: structs.Resources{MilliCPU: 2000, Memory: 2 << 30},
		Spark:     &structs.Spark{MainApplicationFile: "/a.py", ServiceAccount: "spark", Executor: structs.SparkExecutor{Instances: 2, Cores: 1, Memory: 1 << 30}}})
	require.NoError(t, err)
	run := func(name, path string) (*structs.Job, string) {
		spec, err := json.Marshal(map[string]any{"kind": "command", "name": name, "resources": map[string]any{"cpu": 2, "memory": "2Gi"},
			"env":     map[string]string{"PATH": path},
			"command": []string{atomBin, "run", "--kind", "spark", "--job-spec", string(job)}})
		require.NoError(t, err)
		r, err := c.SubmitJob(context.Background(), spec, "req-"+name)
		require.NoError(t, err)
		j := waitJob(t, c, r.JobID)
		var log bytes.Buffer
		require.NoError(t, c.Logs(context.Background(), r.JobID, "", false, &log))
		return j, log.String()
	}
	submit(t, c, "ready", map[string]any{"cpu": 1}, "true") // the cluster config has landed
	j, log := run("fails", bin+":/usr/bin:/bin")
	assert.Equal(t, structs.JobFailed, j.State)
	assert.Equal(t, "replica 0 failed with exit code 1: ZeroDivisionError: division by zero", j.Reason)
	assert.Contains(t, log, "atom: spark runs in local mode on this (local) backend: --master local[2], a driver heap of 1664m of the task's 2Gi; "+
		"Spark's executors are threads of the driver there, so spark.executor (2 of 1 core and 1Gi) do not apply\n")
	assert.Contains(t, log, "Running Spark version 4.3.0 (--master local[2] --name clean --driver-memory 1664m --conf spark.driver.host=127.0.0.1 /a.py)")
	assert.Contains(t, log, "Traceback (most recent call last):\n  File \"/a.py\", line 3, in <module>\n    1/0\nZeroDivisionError: division by zero\n",
		"the driver's output is all there")

	j, _ = run("no-spark", "/usr/bin:/bin")
	assert.Equal(t, structs.JobFailed, j.State)
	assert.Equal(t, "replica 0 failed with exit code 4: job type spark: spark-submit is not on PATH and SPARK_HOME is unset: "+
		"install Spark where the driver runs and put its bin on PATH (from atom's checkout: make deps-spark, which prints the line to export; then restart coordinator dev), run an image with Spark, or set SPARK_HOME in the job's env", j.Reason)
}
