// Command benchspark runs the seed's LiDAR clean on a real Kubernetes
// node twice in one run, with dynamic allocation and then with as many
// fixed executors as the first run peaked at, and prints what each cost:
// a test control plane (test/k8s/k8stest) with one real node (kubelet,
// containerd, runc; 2 CPUs here), the spark image of images/ imported,
// and a one-server coordinator (kube backend) binding the executor Pods
// the drivers ask the API server for.
//
// Each job runs test/spark/lidar_idle.py: lidar_clean.py (-points points
// written here with parquet-go, Parquet in, Parquet out, on a hostPath
// claim both driver and executors mount), then an idle spell of -idle
// before spark.stop, as a pipeline waits between steps. Its driver has 1
// CPU; its executors 1 core and 1Gi each, asking 500m
// (executor.coreRequest). Both outputs are checked against the input
// (count and checksum of the points kept).
//
//   - dynamic: dynamicAllocation {maxExecutors: -max-executors}; executors
//     idle for 3 s go (shuffle tracking: shuffle files kept 3 s at most).
//   - fixed: executor.instances = the dynamic run's peak, held throughout.
//
// Output is key=value lines: executors_peak and executors_final (what the
// driver had at the end of its idle spell, its own count), job_seconds
// and fixed_job_seconds (the submission to `job status` showing the job
// ended, polled every 100 ms), executor_seconds_dynamic and
// executor_seconds_fixed (the time executor tasks held their room, summed
// over executors, polled every 100 ms). Progress goes to stderr;
// BENCHSPARK_LOG=debug shows the coordinator's log. The machine's
// real-node lock is taken first (one real node per machine): another
// program's node makes this one wait.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
	"github.com/atom-sched/atom/test/spark/lidar"
)

var (
	flagPoints  = flag.Int("points", 3_000_000, "LiDAR points to clean (in 4 Parquet files)")
	flagMax     = flag.Int("max-executors", 2, "the dynamic run's maxExecutors (the node has 2 CPUs: the driver takes 1, each executor 500m)")
	flagIdle    = flag.Int("idle", 20, "seconds each job idles after its clean, before it stops")
	flagTimeout = flag.Duration("timeout", 20*time.Minute, "give up after this long (waiting for the machine's real node included)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchspark:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	if *flagMax < 1 || *flagMax > 2 {
		return fmt.Errorf("-max-executors %d: give 1 or 2 (the driver's CPU and two executors of 500m fill the node)", *flagMax)
	}
	if *flagIdle < 0 || *flagPoints < 4 {
		return fmt.Errorf("-idle %d, -points %d: give an idle spell of 0 s or more and 4 points or more", *flagIdle, *flagPoints)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()
	fmt.Printf("points=%d max_executors=%d idle_s=%d\n", *flagPoints, *flagMax, *flagIdle)

	dir, err := os.MkdirTemp("", "benchspark-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	want, err := lidar.WritePoints(filepath.Join(dir, "points"), *flagPoints, 4)
	if err != nil {
		return err
	}
	logf("wrote %d points to %s; %d to keep", *flagPoints, dir, want.Points)

	// The control plane, the real node (once the machine's real-node lock
	// is free) with the spark image, and the coordinator.
	e, err := nodetest.New(ctx, nodetest.Options{Name: "benchspark", Images: []string{"spark"}, Logger: nodetest.StderrLogger("BENCHSPARK_LOG"), Logf: logf})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
		}
	}()
	img := e.Imported["spark"]
	fmt.Printf("image_built=%t cluster_startup_s=%.2f node_startup_s=%.2f image_import_s=%.2f\n",
		img.Built, e.Cluster.StartupTime.Seconds(), e.Node.StartupTime.Seconds(), img.Import.Seconds())
	if err := nodetest.SparkDriverRBAC(ctx, e.Cluster); err != nil {
		return err
	}
	if _, err := nodetest.HostPathClaim(ctx, e.Cluster, "lidar", dir); err != nil {
		return err
	}
	if err := nodetest.MakeLidarPrograms(ctx, e.Cluster); err != nil {
		return err
	}

	dyn, err := runJob(ctx, e, "lidar-dynamic", nodetest.LidarJob("lidar-dynamic", "lidar", 0, *flagMax, *flagIdle, false), dir, want)
	if err != nil {
		return fmt.Errorf("dynamic allocation: %w", err)
	}
	fmt.Printf("executors_peak=%d\n", dyn.peak)
	fmt.Printf("executors_final=%d\n", dyn.final)
	fmt.Printf("job_seconds=%.1f\n", dyn.seconds)
	fixed, err := runJob(ctx, e, "lidar-fixed", nodetest.LidarJob("lidar-fixed", "lidar", dyn.peak, 0, *flagIdle, false), dir, want)
	if err != nil {
		return fmt.Errorf("fixed executors: %w", err)
	}
	fmt.Printf("fixed_executors=%d fixed_executors_final=%d\n", fixed.peak, fixed.final)
	fmt.Printf("fixed_job_seconds=%.1f\n", fixed.seconds)
	fmt.Printf("executor_seconds_dynamic=%.1f\n", dyn.executorSeconds)
	fmt.Printf("executor_seconds_fixed=%.1f\n", fixed.executorSeconds)
	return nil
}

// result is one job's figures.
type result struct {
	peak, final     int
	seconds         float64
	executorSeconds float64
}

// idleLine is lidar_idle.py's last word: how many executors it kept.
var idleLine = regexp.MustCompile(`lidar: idle [0-9.]+ s with ([0-9]+) executors\n`)

// runJob submits spec, follows its executors until it ends, checks its
// output against want and returns its figures.
func runJob(ctx context.Context, e *nodetest.Env, name, spec, dir string, want lidar.Figures) (result, error) {
	var r result
	if err := os.RemoveAll(filepath.Join(dir, "cleaned")); err != nil {
		return r, err
	}
	submitted := time.Now()
	sub, err := e.SubmitJob(ctx, []byte(spec), "")
	if err != nil {
		return r, err
	}
	logf("%s: submitted %s", name, sub.JobID)
	w := nodetest.WatchExecutors(ctx, e.Client, sub.JobID)
	j, tasks, err := w.Wait()
	if err != nil {
		return r, err
	}
	var log bytes.Buffer
	if err := e.Logs(ctx, sub.JobID, "", false, &log); err != nil {
		return r, fmt.Errorf("job logs: %w", err)
	}
	if j.State != structs.JobSucceeded {
		return r, fmt.Errorf("job %s %s: %s (tasks %d); its log:\n%s", j.ID, j.State, j.Reason, len(tasks), log.String())
	}
	m := idleLine.FindStringSubmatch(log.String())
	if m == nil {
		return r, fmt.Errorf("job %s: no idle line in its log:\n%s", j.ID, log.String())
	}
	r.final, _ = strconv.Atoi(m[1])
	got, err := lidar.ReadCleaned(filepath.Join(dir, "cleaned"))
	if err != nil {
		return r, err
	}
	if got != want {
		return r, fmt.Errorf("job %s kept %d points (checksum %x), not the %d (checksum %x) the input keeps", j.ID, got.Points, got.Sum, want.Points, want.Sum)
	}
	r.peak, r.executorSeconds = w.Peak(), w.ExecutorSeconds()
	r.seconds = w.Ended().Sub(submitted).Seconds()
	logf("%s: %s in %.1fs, %d executors at most, %d at the end, %.1f executor-seconds; %d points kept",
		name, j.State, r.seconds, r.peak, r.final, r.executorSeconds, got.Points)
	return r, nil
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
