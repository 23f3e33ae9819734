package images_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/atom-sched/atom/test/images/imagestest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkArchive: the archive holds one image for this machine, named ref in
// the index (what `ctr -n k8s.io images import` names it), with gzip
// layers and the given entrypoint.
func checkArchive(t *testing.T, archive, ref string, entrypoint ...string) imagestest.Config {
	t.Helper()
	a, err := imagestest.ReadArchive(archive)
	require.NoError(t, err)
	assert.Equal(t, ref, a.RefName)
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", a.Manifest.MediaType)
	for _, l := range a.Manifest.Layers {
		assert.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", l.MediaType)
	}
	assert.Equal(t, "linux", a.Config.OS)
	assert.Equal(t, runtime.GOARCH, a.Config.Architecture)
	assert.Equal(t, entrypoint, a.Config.Config.Entrypoint)
	assert.Empty(t, a.Config.Config.Cmd, "ENTRYPOINT resets the base's CMD")
	return a.Config
}

// TestBuildCPU builds the cpu image as make images does and looks inside:
// /app/atom is the entrypoint and runs, with the FUSE library and
// fusermount it mounts the dataset cache with; a second build of
// unchanged inputs builds nothing.
func TestBuildCPU(t *testing.T) {
	archive, ref := imagestest.Ensure(t, "cpu")
	assert.Equal(t, "localhost/atom/cpu:dev", ref)
	assert.Equal(t, filepath.Join(imagestest.CacheDir(), "cpu.oci.tar"), archive)
	cfg := checkArchive(t, archive, ref, "/app/atom")
	assert.Contains(t, cfg.Env("PATH"), "/usr/bin")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := imagestest.MustRun(t, ctx, "cpu", nil, "/app/atom", "--help")
	assert.Contains(t, out, "the in-container agent of atom jobs")
	out = imagestest.MustRun(t, ctx, "cpu", nil, "sh", "-c",
		"ldconfig -p | grep -c 'libfuse.so.2 '; command -v fusermount3; test -d /app/plugins && echo plugins; . /etc/os-release; echo $VERSION_CODENAME")
	assert.Equal(t, "1\n/usr/bin/fusermount3\nplugins\nbookworm\n", out)

	// Unchanged inputs: not built again.
	cmd := exec.CommandContext(ctx, filepath.Join(imagestest.RepoRoot(), "images", "build.sh"), "cpu")
	cmd.Dir = imagestest.RepoRoot()
	b, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(b), "image=localhost/atom/cpu:dev archive="+archive+" built=false ")
}

// TestBuildImages builds the other images make images builds and checks
// what each is for: openmpi's mpirun (on Debian), the coordinator as its
// unprivileged user, and Spark: spark-submit on PATH, a local[1] PySpark
// job, and the executor class Spark's Kubernetes backend starts.
func TestBuildImages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Spark image takes several minutes to build the first time")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("openmpi", func(t *testing.T) {
		archive, ref := imagestest.Ensure(t, "openmpi")
		cfg := checkArchive(t, archive, ref, "/app/atom")
		assert.Equal(t, "1", cfg.Env("OMPI_ALLOW_RUN_AS_ROOT"))
		out := imagestest.MustRun(t, ctx, "openmpi", nil, "sh", "-c", "mpirun --version; command -v orted; /app/atom --help")
		assert.Contains(t, out, "Open MPI) 4.1")
		assert.Contains(t, out, "/usr/bin/orted\n")
		assert.Contains(t, out, "mpirun's remote-launch agent")
	})

	t.Run("coordinator", func(t *testing.T) {
		archive, ref := imagestest.Ensure(t, "coordinator")
		cfg := checkArchive(t, archive, ref, "/app/coordinator")
		assert.Equal(t, "65532:65532", cfg.Config.User)
		out := imagestest.MustRun(t, ctx, "coordinator", nil, "sh", "-c", "/app/coordinator --help; stat -c %u:%g /var/lib/atom; id -u")
		assert.Contains(t, out, "server")
		assert.Contains(t, out, "65532:65532\n65532\n")
	})

	t.Run("spark", func(t *testing.T) {
		archive, ref := imagestest.Ensure(t, "spark")
		cfg := checkArchive(t, archive, ref, "/app/atom")
		assert.Equal(t, "/opt/spark", cfg.Env("SPARK_HOME"))
		assert.True(t, strings.HasPrefix(cfg.Env("PATH"), "/opt/spark/bin:"), cfg.Env("PATH"))

		// buildah run gives the container a host name no /etc/hosts
		// resolves (a Pod's does): Spark is told its address instead.
		local := []string{"SPARK_LOCAL_IP=127.0.0.1", "SPARK_LOCAL_HOSTNAME=localhost"}
		out := imagestest.MustRun(t, ctx, "spark", local, "sh", "-c", "command -v spark-submit; spark-submit --version 2>&1; /app/atom --help")
		assert.Contains(t, out, "/opt/spark/bin/spark-submit\n")
		assert.Contains(t, out, "version 4.")
		assert.Contains(t, out, "the in-container agent of atom jobs", "/app/atom hands anything but Spark's commands to atom")

		// Spark's default GPU discovery script is atom's: no GPU here.
		out = imagestest.MustRun(t, ctx, "spark", nil, "/opt/spark/examples/src/main/scripts/getGpusResources.sh")
		assert.Equal(t, "{\"name\":\"gpu\",\"addresses\":[]}\n", out)

		// Spark in local mode, with its Python workers.
		out = imagestest.MustRun(t, ctx, "spark", local, "spark-submit", "--master", "local[1]",
			"--conf", "spark.ui.enabled=false", "/opt/spark/examples/src/main/python/pi.py", "2")
		assert.Contains(t, out, "Pi is roughly 3.1")

		// An executor as Spark's Kubernetes backend starts one, through
		// /app/atom: the JVM finds KubernetesExecutorBackend and tries its
		// (absent) driver.
		executor := append(local,
			"SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@127.0.0.1:1",
			"SPARK_EXECUTOR_ID=1", "SPARK_EXECUTOR_CORES=1", "SPARK_EXECUTOR_MEMORY=512m",
			"SPARK_APPLICATION_ID=spark-test", "SPARK_EXECUTOR_POD_IP=127.0.0.1",
			"SPARK_EXECUTOR_POD_NAME=test-exec-1", "SPARK_RESOURCE_PROFILE_ID=0",
			"SPARK_JAVA_OPT_0=-Xss4m")
		b, err := imagestest.Run(ctx, "spark", executor, "/app/atom", "executor")
		require.Error(t, err, "no driver: the executor exits")
		assert.Contains(t, string(b), "INFO KubernetesExecutorBackend: Started daemon")
		assert.NotContains(t, string(b), "ClassNotFoundException")
		assert.Contains(t, string(b), "Failed to connect to /127.0.0.1:1")
	})
}
