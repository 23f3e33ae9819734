package spark_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/plugins/spark"
)

// The job type runs the golden line with the driver's pod IP filled in.
func TestPrepareFillsInThePodIP(t *testing.T) {
	b, err := os.ReadFile("testdata/minimal.yaml")
	require.NoError(t, err)
	spec, err := structs.ParseJobSpec(b)
	require.NoError(t, err)
	j, err := spec.ToJob("u1")
	require.NoError(t, err)
	j.ID = "clean-lidar-x7k2p"
	js, err := json.Marshal(j)
	require.NoError(t, err)
	task := plugin.Task{ID: "clean-lidar-x7k2p-0-a1b2", JobJSON: js,
		Env: map[string]string{"ATOM_NAMESPACE": "atom-jobs", "ATOM_POD_IP": "10.1.2.3"}}

	ex, err := spark.New().Prepare(context.Background(), "v1", task)
	require.NoError(t, err)
	want, err := spark.Command(spark.Input{Job: j, DriverPod: task.ID, Namespace: "atom-jobs"})
	require.NoError(t, err)
	require.Contains(t, want, "spark.driver.host=$(ATOM_POD_IP)")
	want[indexOf(want, "spark.driver.host=$(ATOM_POD_IP)")] = "spark.driver.host=10.1.2.3"
	assert.Equal(t, want, ex.Argv)

	local := task
	local.Env = map[string]string{"ATOM_POD_IP": "127.0.0.1"}
	_, err = spark.New().Prepare(context.Background(), "v1", local)
	assert.EqualError(t, err, "spark jobs run on a Kubernetes cluster (spark-submit --master k8s://...): this task's backend gave it no Kubernetes namespace or API server (the local backend has none); submit it to a cluster with backend kubernetes")

	delete(task.Env, "ATOM_POD_IP")
	_, err = spark.New().Prepare(context.Background(), "v1", task)
	assert.EqualError(t, err, "ATOM_POD_IP is not set: the Kubernetes backend sets it to the driver pod's IP (status.podIP)")
	task.JobJSON = []byte(`{"kind":"spark"}`)
	_, err = spark.New().Prepare(context.Background(), "v1", task)
	assert.EqualError(t, err, "the job's spark section is missing (ATOM_JOB_SPEC): the backend passes the job as accepted")
}

// A job with tolerations: Prepare writes its executor pod template (the
// golden one) where the line says, in TMPDIR; a job without writes none.
func TestPrepareWritesThePodTemplate(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	task := func(spec string) plugin.Task {
		b, err := os.ReadFile(spec)
		require.NoError(t, err)
		s, err := structs.ParseJobSpec(b)
		require.NoError(t, err)
		j, err := s.ToJob("u1")
		require.NoError(t, err)
		j.ID = structs.JobID(j.Name + "-x7k2p")
		js, err := json.Marshal(j)
		require.NoError(t, err)
		return plugin.Task{ID: string(j.ID) + "-0-a0", JobJSON: js,
			Env: map[string]string{"ATOM_NAMESPACE": "atom-jobs", "ATOM_POD_IP": "10.1.2.3", "ATOM_POD_NAME": "spot-etl-x7k2p-0-a0-1f2e"}}
	}
	ex, err := spark.New().Prepare(context.Background(), "v1", task("testdata/minimal.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(ex.Argv, " "), "podTemplateFile")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "no template for a job without tolerations")

	ex, err = spark.New().Prepare(context.Background(), "v1", task("testdata/tolerations.yaml"))
	require.NoError(t, err)
	path := filepath.Join(dir, "atom-spot-etl-x7k2p-0-a0-1f2e-executor-pod.yaml")
	assert.Equal(t, path, spark.ExecutorPodTemplatePath("spot-etl-x7k2p-0-a0-1f2e"))
	assert.Contains(t, ex.Argv, "spark.kubernetes.executor.podTemplateFile="+path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/tolerations.pod-template.golden")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	_, err = spark.New().Prepare(context.Background(), "v1", task("testdata/tolerations.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "write the executor pod template that gives executors the job's tolerations: open "+dir+"/missing/atom-spot-etl-x7k2p-0-a0-1f2e-executor-pod.yaml: no such file or directory (set TMPDIR to a writable directory)")
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
