// Package spark runs real Spark jobs on atom's local backend: a
// `coordinator dev` process (its cluster config the test's) with atom
// beside it and, first on its PATH, the virtualenv `make deps-spark`
// installs pyspark and redis-py into (ATOM_SPARK_VENV), so its tasks find
// spark-submit and a python3 that imports them, as a user's would.
//
// The jobs are the seed's examples: a PySpark job cleaning a LiDAR point
// cloud (Parquet in, Parquet out; the expected figures computed here),
// a Python job reading Redis keys of every type through REDIS_HOST and
// REDIS_PORT, a driver that reads its GPUs from atom's discovery script,
// and drivers that fail.
package spark

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/spark/lidar"
	"github.com/atom-sched/atom/test/testbin"
)

// sparkVersion is the pyspark `make deps-spark` pins (SPARK_VERSION): its
// virtualenv is the default ATOM_SPARK_VENV.
const sparkVersion = "4.3.0"

var (
	binDir string // coordinator and atom, side by side
	venv   string // the virtualenv with spark-submit, python3, pyspark and redis-py
)

// TestMain finds the Spark virtualenv, or fails every test saying how to
// get one, and builds coordinator and atom.
func TestMain(m *testing.M) {
	venv = os.Getenv("ATOM_SPARK_VENV")
	if venv == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			cache = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		venv = filepath.Join(cache, "atom", "spark-"+sparkVersion)
	}
	for _, p := range []string{"bin/spark-submit", "bin/python3"} {
		if fi, err := os.Stat(filepath.Join(venv, p)); err != nil || fi.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "test/spark: %s is missing: run make deps-spark, which installs pyspark %s, redis-py and Java 17 "+
				"(make test runs it), or set ATOM_SPARK_VENV to a virtualenv with them\n", filepath.Join(venv, p), sparkVersion)
			os.Exit(1)
		}
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "test/spark: java -version: %v %s: Spark %s needs Java 17 or later: run make deps-spark\n", err, out, sparkVersion)
		os.Exit(1)
	}
	testbin.Main(m, &binDir, nil)
}

const token = "spark-test-token-0123456789"

// startDev runs `coordinator dev` on cluster (a cluster config) with the
// virtualenv's bin first on its PATH, which its tasks inherit, and
// returns its client once its nodes are there. Its data directory is over
// 200 characters long: a job runs wherever an operator keeps its data.
func startDev(t *testing.T, cluster string, nodes int) *client.Client {
	t.Helper()
	dir := t.TempDir()
	tokens, config := filepath.Join(dir, "tokens.yaml"), filepath.Join(dir, "cluster.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users:\n  - {name: dev, token: "+token+", admin: true}\n"), 0o600))
	require.NoError(t, os.WriteFile(config, []byte(cluster), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(filepath.Join(binDir, "coordinator"), "dev", "--http-addr", addr, "--data-dir", filepath.Join(dir, strings.Repeat("a-long-data-directory/", 10)),
		"--tokens", tokens, "--cluster-config", config, "--cycle", "100ms", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(venv, "bin")+":"+os.Getenv("PATH"))
	log, err := os.Create(filepath.Join(dir, "coordinator.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("coordinator dev's log:\n%s", b)
		}
	})
	c := client.New("http://"+addr, token)
	require.Eventually(t, func() bool {
		got, err := c.Nodes(context.Background())
		return err == nil && len(got) == nodes
	}, 60*time.Second, 50*time.Millisecond, "coordinator dev serves its cluster")
	return c
}

// writePoints writes the seed's point cloud (lidar.WritePoints) and
// returns the figures of the points a clean keeps.
func writePoints(t *testing.T, dir string, n, files int) lidar.Figures {
	t.Helper()
	keep, err := lidar.WritePoints(dir, n, files)
	require.NoError(t, err)
	return keep
}

// readCleaned reads the figures of the Parquet files Spark wrote to dir.
func readCleaned(t *testing.T, dir string) lidar.Figures {
	t.Helper()
	got, err := lidar.ReadCleaned(dir)
	require.NoError(t, err)
	return got
}

// job is one submitted job: when, and (end, closed once it has ended)
// when the test first saw it ended.
type job struct {
	id     structs.JobID
	name   string
	at     time.Time
	end    chan struct{}
	endsAt time.Time // set before end is closed
}

// submitJob submits spec and watches for the job's end while the test
// goes on, so each job's time is its own.
func submitJob(t *testing.T, c *client.Client, name, spec string) *job {
	t.Helper()
	r, err := c.SubmitJob(context.Background(), []byte(spec), "req-"+name)
	require.NoError(t, err, "submit %s:\n%s", name, spec)
	j := &job{id: r.JobID, name: name, at: time.Now(), end: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := c.Job(ctx, j.id); err == nil && st.Job.State.Ended() {
				j.endsAt = time.Now()
				close(j.end)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return j
}

// ended waits for j to end and returns it and its one task's log.
func ended(t *testing.T, c *client.Client, j *job) (*structs.Job, string) {
	t.Helper()
	require.Eventually(t, func() bool {
		select {
		case <-j.end:
			return true
		default:
			return false
		}
	}, 8*time.Minute, 100*time.Millisecond, "job %s ends", j.name)
	st, err := c.Job(context.Background(), j.id)
	require.NoError(t, err)
	t.Logf("job %s: %s %.1f s after its submission: %s", j.name, st.Job.State, j.endsAt.Sub(j.at).Seconds(), st.Job.Reason)
	var log bytes.Buffer
	require.NoError(t, c.Logs(context.Background(), j.id, "", false, &log))
	return st.Job, log.String()
}

// TestSparkOnLocalBackend runs the seed's Spark and Redis examples, a GPU
// driver and failing drivers on coordinator dev at once, then checks each.
// The LiDAR and GPU jobs have names of the most characters allowed (63).
func TestSparkOnLocalBackend(t *testing.T) {
	r := cachetest.StartRedis(t)
	c := startDev(t, fmt.Sprintf(`clusters:
  - {name: local, backend: local, redis: "%s"}
nodes:
  - {name: cpu-1, cpu: "8", memory: 16Gi}
  - {name: a100-1, cpu: "8", memory: 32Gi, accelerators: {type: A100, count: 2}}
quotas:
  - {scope: "user:dev", limits: {cpu: "32", memory: 128Gi, gpu/A100: 2}}
`, r.Addr), 2)
	here, err := os.Getwd()
	require.NoError(t, err)
	data := t.TempDir()
	in, out := filepath.Join(data, "points"), filepath.Join(data, "cleaned")
	start := time.Now()
	want := writePoints(t, in, 3_000_000, 4)
	t.Logf("wrote 3,000,000 points to %s in %.1f s; %d to keep", in, time.Since(start).Seconds(), want.Points)
	loadKeys(t, r)

	lidar := submitJob(t, c, "lidar-clean", fmt.Sprintf(`kind: spark
name: %s
spark:
  mainApplicationFile: %s
  arguments: [%s, %s]
  driver: {cores: 2, memory: 1Gi}
  sparkConf: {spark.ui.enabled: "false", spark.sql.shuffle.partitions: "4"}
`, longestName("lidar-clean-"), filepath.Join(here, "lidar_clean.py"), in, out))
	missing := filepath.Join(data, "no-such-points")
	fails := submitJob(t, c, "lidar-missing", fmt.Sprintf(`kind: spark
name: lidar-missing
resources: {cpu: 1, memory: 1Gi}
spark:
  mainApplicationFile: %s
  arguments: [%s, %s]
  sparkConf: {spark.ui.enabled: "false"}
`, filepath.Join(here, "lidar_clean.py"), missing, filepath.Join(data, "never")))
	gpus := submitJob(t, c, "gpus", fmt.Sprintf(`kind: spark
name: %s
resources: {cpu: 1, memory: 1Gi, accelerators: {type: A100, count: 2}}
spark:
  mainApplicationFile: %s
  sparkConf: {spark.ui.enabled: "false"}
`, longestName("gpus-"), filepath.Join(here, "gpus.py")))
	noSpark := submitJob(t, c, "no-spark", `kind: spark
name: no-spark
env: {PATH: /usr/bin:/bin}
resources: {cpu: 1, memory: 1Gi}
spark: {mainApplicationFile: /jobs/app.py}
`)
	inference := submitJob(t, c, "inference", fmt.Sprintf(`kind: command
name: inference
command: [python3, %s, frame:001:path, frame:001:meta, queue, tags, scores, missing]
resources: {cpu: 1, memory: 512Mi}
`, filepath.Join(here, "inference.py")))

	t.Run("redis", func(t *testing.T) {
		j, log := ended(t, c, inference)
		require.Equal(t, structs.JobSucceeded, j.State, "%s\n%s", j.Reason, log)
		assert.Equal(t, `{"key": "frame:001:path", "type": "string", "value": "s3://dataset/lidar/frame_001.bin"}
{"key": "frame:001:meta", "type": "hash", "value": {"points": "120000", "sensor": "lidar-top"}}
{"key": "queue", "type": "list", "value": ["frame_001", "frame_002", "frame_003"]}
{"key": "tags", "type": "set", "value": ["city", "night", "rain"]}
{"key": "scores", "type": "zset", "value": [["frame_003", 0.25], ["frame_001", 0.5], ["frame_002", 0.75]]}
{"key": "missing", "type": "none", "value": null}
`, log, "REDIS_HOST and REDIS_PORT name the cluster's Redis; each type read with its own call")
	})
	t.Run("missing spark-submit", func(t *testing.T) {
		j, _ := ended(t, c, noSpark)
		require.Equal(t, structs.JobFailed, j.State)
		assert.Equal(t, "replica 0 failed with exit code 4: job type spark: spark-submit is not on PATH and SPARK_HOME is unset: "+
			"install Spark where the driver runs and put its bin on PATH (from atom's checkout: make deps-spark, which prints the line to export; then restart coordinator dev), run an image with Spark, or set SPARK_HOME in the job's env", j.Reason)
	})
	t.Run("lidar", func(t *testing.T) {
		j, log := ended(t, c, lidar)
		require.Equal(t, structs.JobSucceeded, j.State, "%s\n%s", j.Reason, log)
		note := "atom: spark runs in local mode on this (local) backend: --master local[2], a driver heap of 1g of the task's 1408Mi; " +
			"Spark's executors are threads of the driver there, so spark.executor (2 of 1 core and 1Gi) do not apply\n"
		assert.True(t, strings.HasPrefix(log, note), "the log starts with the note, once: %.400s", log)
		assert.Equal(t, 1, strings.Count(log, "atom: spark runs in local mode"))
		assert.NotContains(t, log, " WARN SparkConf:", "nothing in the line Spark warns about")
		assert.Regexp(t, `DiskBlockManager: Created local directory at /\S+/work/tasks/lidar-clean-[^/]+/tmp/blockmgr-`, log,
			"Spark's scratch is in the task's TMPDIR, which goes with the task")
		// print() writes its line and its newline apart: a stderr line
		// may come between them in the task's one output file.
		assert.Contains(t, log, fmt.Sprintf("lidar: kept %d points in %s (2 threads)", want.Points, out))
		start := time.Now()
		got := readCleaned(t, out)
		t.Logf("read %d cleaned points in %.1f s", got.Points, time.Since(start).Seconds())
		assert.Equal(t, want, got, "the points kept, and only they")
	})
	t.Run("gpus", func(t *testing.T) {
		j, log := ended(t, c, gpus)
		require.Equal(t, structs.JobSucceeded, j.State, "%s\n%s", j.Reason, log)
		assert.Contains(t, log, "driver gpus: 0,1\n", "Spark ran atom gpus --spark for the driver's two simulated A100s")
	})
	t.Run("failing driver", func(t *testing.T) {
		j, log := ended(t, c, fails)
		require.Equal(t, structs.JobFailed, j.State, log)
		assert.Equal(t, fmt.Sprintf("replica 0 failed with exit code 1: pyspark.errors.exceptions.captured.AnalysisException: "+
			"[PATH_NOT_FOUND] Path does not exist: file:%s. SQLSTATE: 42K03", missing), j.Reason)
		assert.Contains(t, log, "Traceback (most recent call last):", "the whole story stays in the log")
	})
}

// longestName is a job name of the most characters allowed (63).
func longestName(prefix string) string {
	return prefix + strings.Repeat("x", 63-len(prefix))
}

// loadKeys puts the keys the inference job reads into r, one of each
// Redis type.
func loadKeys(t *testing.T, r *cachetest.Server) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "frame:001:path", "s3://dataset/lidar/frame_001.bin", 0).Err())
	require.NoError(t, c.HSet(ctx, "frame:001:meta", "sensor", "lidar-top", "points", "120000").Err())
	require.NoError(t, c.RPush(ctx, "queue", "frame_001", "frame_002", "frame_003").Err())
	require.NoError(t, c.SAdd(ctx, "tags", "rain", "night", "city").Err())
	require.NoError(t, c.ZAdd(ctx, "scores", redis.Z{Score: 0.5, Member: "frame_001"}, redis.Z{Score: 0.75, Member: "frame_002"},
		redis.Z{Score: 0.25, Member: "frame_003"}).Err())
}
