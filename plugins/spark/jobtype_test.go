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
	local.Env = map[string]string{"ATOM_POD_IP": "127.0.0.1", "PATH": "/nowhere:/usr/bin"}
	_, err = spark.New().Prepare(context.Background(), "v1", local)
	assert.EqualError(t, err, "spark-submit is not on PATH and SPARK_HOME is unset: install Spark where the driver runs and put its bin on PATH (from atom's checkout: make deps-spark, which prints the line to export; then restart coordinator dev), run an image with Spark, or set SPARK_HOME in the job's env",
		"no namespace: the local backend, whose driver runs Spark in local mode")

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

// fakeSpark makes a directory holding executables named names, as a
// virtualenv's bin holds pip's spark-submit beside python3.
func fakeSpark(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	}
	return dir
}

// localTask is a task of spec on the local backend: no namespace, its
// allocation in the environment as the backend sets it.
func localTask(t *testing.T, spec string, env map[string]string) plugin.Task {
	t.Helper()
	s, err := structs.ParseJobSpec([]byte(spec))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = structs.JobID(j.Name + "-x7k2p")
	js, err := json.Marshal(j)
	require.NoError(t, err)
	return plugin.Task{ID: string(j.ID) + "-0-a0", JobJSON: js, Env: env}
}

// On the local backend the driver runs Spark in local mode on its whole
// cores, with the heap its memory leaves after Spark's overhead, its GPUs
// named by atom's discovery script, the python beside spark-submit, and
// a note in the log that executors do not apply.
func TestPrepareLocal(t *testing.T) {
	bin := fakeSpark(t, "spark-submit", "python3")
	tmp := t.TempDir()
	const spec = "kind: spark\nname: clean-lidar\nresources: {cpu: 2500m, memory: 4Gi, accelerators: {type: A100, count: 2}}\n" +
		"spark:\n  mainApplicationFile: /jobs/clean.py\n  arguments: [--in, /data]\n" +
		"  dynamicAllocation: {minExecutors: 1, maxExecutors: 4}\n  sparkConf: {spark.sql.shuffle.partitions: \"8\", spark.ui.enabled: \"false\"}\n"
	env := map[string]string{"PATH": "/nowhere:" + bin + ":/usr/bin", "TMPDIR": tmp, "ATOM_BIN": "/app/atom",
		"ATOM_CPU_MILLI": "2500", "ATOM_MEMORY_BYTES": "4294967296"}
	task := localTask(t, spec, env)
	task.Accelerators = 2
	var log strings.Builder
	ex, err := spark.JobType{Log: &log}.Prepare(context.Background(), "v1", task)
	require.NoError(t, err)
	script := filepath.Join(tmp, "atom-clean-lidar-x7k2p-0-a0-gpus")
	assert.Equal(t, []string{filepath.Join(bin, "spark-submit"), "--master", "local[2]", "--name", "clean-lidar",
		"--driver-memory", "3712m",
		"--conf", "spark.driver.resource.gpu.amount=2", "--conf", "spark.driver.resource.gpu.discoveryScript=" + script,
		"--conf", "spark.driver.host=127.0.0.1",
		"--conf", "spark.sql.shuffle.partitions=8", "--conf", "spark.ui.enabled=false",
		"/jobs/clean.py", "--in", "/data"}, ex.Argv)
	assert.Equal(t, map[string]string{"PYSPARK_PYTHON": filepath.Join(bin, "python3"), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": tmp}, ex.Env)
	assert.Equal(t, "atom: spark runs in local mode on this (local) backend: --master local[2], a driver heap of 3712m of the task's 4Gi; "+
		"Spark's executors are threads of the driver there, so spark.executor (1 core and 1Gi each) and dynamicAllocation (1 to 4) do not apply\n", log.String())
	b, err := os.ReadFile(script)
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\n# Spark's GPU discovery script: the GPUs atom allocated this task.\nexec '/app/atom' gpus --spark\n", string(b))
	fi, err := os.Stat(script)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "Spark runs it by its path")

	// The job's own Python and local IP stay; SPARK_HOME names the
	// spark-submit; less than a core is one thread; no GPUs, no script.
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "bin", "spark-submit"), []byte("#!/bin/sh\n"), 0o755))
	task = localTask(t, "kind: spark\nname: tiny\nresources: {cpu: 500m, memory: 834Mi}\nspark: {mainApplicationFile: /a.jar, mainClass: org.example.Tiny}\n",
		map[string]string{"PATH": bin, "SPARK_HOME": home, "PYSPARK_DRIVER_PYTHON": "/usr/bin/python3", "SPARK_LOCAL_IP": "10.0.0.1",
			"ATOM_CPU_MILLI": "500", "ATOM_MEMORY_BYTES": "874512384"})
	log.Reset()
	ex, err = spark.JobType{Log: &log}.Prepare(context.Background(), "v1", task)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(home, "bin", "spark-submit"), "--master", "local[1]", "--name", "tiny", "--class", "org.example.Tiny",
		"--driver-memory", "450m", "--conf", "spark.driver.host=127.0.0.1", "/a.jar"}, ex.Argv)
	assert.Empty(t, ex.Env)
	assert.Contains(t, log.String(), "spark.executor (2 of 1 core and 1Gi) do not apply")

	// What cannot run is said in a line.
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"SPARK_HOME without spark-submit", map[string]string{"SPARK_HOME": "/opt/nospark", "PATH": bin},
			"SPARK_HOME is /opt/nospark but /opt/nospark/bin/spark-submit is not an executable: point SPARK_HOME at a Spark distribution, or unset it to use spark-submit from PATH"},
		{"too little memory", map[string]string{"PATH": bin, "ATOM_MEMORY_BYTES": "536870912"},
			"spark: the driver's 512Mi leave a heap of 128Mi after Spark's memory overhead (384Mi): give the driver at least 834Mi"},
		{"bad allocation", map[string]string{"PATH": bin, "ATOM_CPU_MILLI": "two"},
			`ATOM_CPU_MILLI="two" is not a count: the backend sets it to the task's allocation`},
	}
	for _, tc := range cases {
		_, err := spark.JobType{Log: &log}.Prepare(context.Background(), "v1",
			localTask(t, "kind: spark\nname: x\nresources: {cpu: 1, memory: 1Gi}\nspark: {mainApplicationFile: /a.py}\n", tc.env))
		assert.EqualError(t, err, tc.want, tc.name)
	}
	gpuTask := localTask(t, spec, map[string]string{"PATH": bin, "TMPDIR": tmp})
	gpuTask.Accelerators = 1
	_, err = spark.JobType{Log: &log}.Prepare(context.Background(), "v1", gpuTask)
	assert.EqualError(t, err, `the driver has GPUs and atom's binary is unknown (ATOM_BIN ""): atom sets it to itself, the GPU discovery script Spark runs (atom gpus --spark)`)
}

// The driver reaches the API server where its Pod's environment says: an
// image's ATOM_KUBERNETES_API, else the kubernetes Service the kubelet
// names (no cluster DNS needed), else the Service's DNS name.
func TestAPIServerOf(t *testing.T) {
	svc := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	assert.Equal(t, "https://10.96.0.1:443", spark.APIServerOf(svc))
	assert.Equal(t, "https://[fd00::1]:6443", spark.APIServerOf(map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}))
	assert.Equal(t, "https://api.example:6443", spark.APIServerOf(map[string]string{"ATOM_KUBERNETES_API": "https://api.example:6443",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}))
	assert.Equal(t, "", spark.APIServerOf(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
	assert.Equal(t, "", spark.APIServerOf(nil))

	b, err := os.ReadFile("testdata/minimal.yaml")
	require.NoError(t, err)
	spec, err := structs.ParseJobSpec(b)
	require.NoError(t, err)
	j, err := spec.ToJob("u1")
	require.NoError(t, err)
	j.ID = "clean-lidar-x7k2p"
	js, err := json.Marshal(j)
	require.NoError(t, err)
	env := map[string]string{"ATOM_NAMESPACE": "atom-jobs", "ATOM_POD_IP": "10.1.2.3"}
	for k, v := range svc {
		env[k] = v
	}
	ex, err := spark.New().Prepare(context.Background(), "v1", plugin.Task{ID: "clean-lidar-x7k2p-0-a1b2", JobJSON: js, Env: env})
	require.NoError(t, err)
	assert.Equal(t, []string{"spark-submit", "--master", "k8s://https://10.96.0.1:443"}, ex.Argv[:3])
}

// A job without an image runs the cluster's default, which the backend
// names in ATOM_IMAGE: its executors run it too.
func TestPrepareExecutorImage(t *testing.T) {
	b, err := os.ReadFile("testdata/refuse-no-image.yaml")
	require.NoError(t, err)
	spec, err := structs.ParseJobSpec(b)
	require.NoError(t, err)
	j, err := spec.ToJob("u1")
	require.NoError(t, err)
	j.ID = "no-image-x7k2p"
	js, err := json.Marshal(j)
	require.NoError(t, err)
	task := plugin.Task{ID: "no-image-x7k2p-0-a1b2", JobJSON: js,
		Env: map[string]string{"ATOM_NAMESPACE": "atom-jobs", "ATOM_POD_IP": "10.1.2.3", "ATOM_IMAGE": "registry.local/atom/spark:4.3.0"}}
	ex, err := spark.New().Prepare(context.Background(), "v1", task)
	require.NoError(t, err)
	assert.Contains(t, ex.Argv, "spark.kubernetes.container.image=registry.local/atom/spark:4.3.0")

	delete(task.Env, "ATOM_IMAGE")
	_, err = spark.New().Prepare(context.Background(), "v1", task)
	assert.EqualError(t, err, `spark: executor image "" is not allowed: give the job an image`)
}
