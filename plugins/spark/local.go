package spark

// The driver's own resources, on either backend, and Spark's local mode,
// which the local backend runs.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Driver is what the driver's task was allocated: it sizes the driver's
// JVM (its heap), its GPUs and, in local mode, Spark's threads.
type Driver struct {
	// MilliCPU: local mode runs local[N] with N its whole cores, at
	// least 1.
	MilliCPU int64
	// Memory is the task's memory in bytes. The heap (--driver-memory)
	// is structs.SparkDriverHeap(Memory): Memory less Spark's memory
	// overhead, max(384 MiB, 10%), which the JVM's off-heap memory
	// (metaspace, code cache, thread stacks, direct buffers) and the
	// Python driver take on top of the heap. 0 leaves Spark's default
	// heap (1g).
	Memory int64
	// GPUs is how many GPUs the task has; Spark learns them as the
	// driver's resource gpu from DiscoveryScript, which GPUs > 0 needs.
	GPUs int
	// DiscoveryScript is an executable Spark runs, without arguments, to
	// learn the driver's GPUs: atom's (WriteDiscoveryScript).
	DiscoveryScript string
}

// options returns the driver's spark-submit options: --driver-memory, and
// the driver's GPU resource as --conf pairs.
func (d Driver) options() ([]string, error) {
	var out []string
	if d.Memory > 0 {
		heap := structs.SparkDriverHeap(d.Memory)
		if heap < structs.MinSparkExecutorMemory {
			return nil, fmt.Errorf("spark: the driver's %s leave a heap of %s after Spark's memory overhead (%s): give the driver at least %s",
				structs.FormatBytes(d.Memory), structs.FormatBytes(heap), structs.FormatBytes(structs.MinSparkMemoryOverhead), structs.FormatBytes(structs.MinSparkDriverResources))
		}
		out = append(out, "--driver-memory", memory(heap))
	}
	if d.GPUs > 0 {
		if d.DiscoveryScript == "" || !strings.HasPrefix(d.DiscoveryScript, "/") {
			return nil, fmt.Errorf("spark: the driver has %d GPUs but no discovery script to name them to Spark", d.GPUs)
		}
		out = append(out, "--conf", "spark.driver.resource.gpu.amount="+strconv.Itoa(d.GPUs),
			"--conf", "spark.driver.resource.gpu.discoveryScript="+d.DiscoveryScript)
	}
	return out, nil
}

// cores is local mode's thread count: the whole cores allocated, at least 1.
func (d Driver) cores() int64 { return max(1, d.MilliCPU/1000) }

// LocalInput is what LocalCommand needs beyond the job.
type LocalInput struct {
	Job         *structs.Job // kind spark, with its Spark section
	SparkSubmit string       // the spark-submit to run (FindSparkSubmit)
	Driver      Driver
}

// LocalCommand returns the spark-submit argv of a driver in local mode,
// as the local backend runs it: --master local[N] on the driver's whole
// cores, its heap and GPUs (Driver), the driver bound to loopback, then
// the spec's sparkConf by key, the application and its arguments.
// Executors do not exist in local mode (Spark runs tasks as threads of
// the driver), so nothing of spark.executor or dynamicAllocation is
// passed: LocalNote says so.
func LocalCommand(in LocalInput) ([]string, error) {
	j := in.Job
	switch {
	case j == nil:
		return nil, errors.New("spark: no job given")
	case j.Kind != structs.KindSpark:
		return nil, fmt.Errorf("spark: job %s is of kind %s: only spark jobs run spark-submit", j.ID, j.Kind)
	case j.Spark == nil:
		return nil, fmt.Errorf("spark: job %s has no spark section", j.ID)
	case in.SparkSubmit == "":
		return nil, errors.New("spark: no spark-submit given")
	}
	if err := j.Spark.Check(); err != nil {
		return nil, fmt.Errorf("spark: job %s: %w", j.ID, err)
	}
	s := j.Spark
	argv := []string{in.SparkSubmit, "--master", "local[" + strconv.FormatInt(in.Driver.cores(), 10) + "]", "--name", j.Name}
	if s.MainClass != "" {
		argv = append(argv, "--class", s.MainClass)
	}
	opts, err := in.Driver.options()
	if err != nil {
		return nil, err
	}
	argv = append(argv, opts...)
	argv = append(argv, "--conf", "spark.driver.host=127.0.0.1")
	for _, k := range sortedKeys(s.SparkConf) {
		argv = append(argv, "--conf", k+"="+s.SparkConf[k])
	}
	argv = append(argv, s.MainApplicationFile)
	return append(argv, s.Arguments...), nil
}

// LocalNote is the line a local-mode driver's log starts with: how Spark
// runs, and that the executors the spec describes do not apply there.
func LocalNote(j *structs.Job, d Driver) string {
	heap := "Spark's default driver heap (1g; the task has no memory of its own)"
	if d.Memory > 0 {
		heap = "a driver heap of " + memory(structs.SparkDriverHeap(d.Memory)) + " of the task's " + structs.FormatBytes(d.Memory)
	}
	s := j.Spark
	e := s.Executor
	cores := fmt.Sprintf("%d cores", e.Cores)
	if e.Cores == 1 {
		cores = "1 core"
	}
	what := fmt.Sprintf("spark.executor (%d of %s and %s)", e.Instances, cores, structs.FormatBytes(e.Memory))
	if d := s.DynamicAllocation; d != nil {
		what = fmt.Sprintf("spark.executor (%s and %s each) and dynamicAllocation (%d to %d)", cores, structs.FormatBytes(e.Memory), d.MinExecutors, d.MaxExecutors)
	}
	return fmt.Sprintf("atom: spark runs in local mode on this (local) backend: --master local[%d], %s; Spark's executors are threads of the driver there, so %s do not apply",
		d.cores(), heap, what)
}

// FindSparkSubmit finds the spark-submit to run in env (the task's
// environment): $SPARK_HOME/bin/spark-submit when SPARK_HOME is set (a
// Spark distribution, or pip's pyspark directory), else spark-submit on
// PATH (a distribution's bin, or the bin of a virtualenv where pyspark
// is installed).
func FindSparkSubmit(env map[string]string) (string, error) {
	if home := env["SPARK_HOME"]; home != "" {
		p := filepath.Join(home, "bin", "spark-submit")
		if !executable(p) {
			return "", fmt.Errorf("SPARK_HOME is %s but %s is not an executable: point SPARK_HOME at a Spark distribution, or unset it to use spark-submit from PATH", home, p)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(env["PATH"]) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, "spark-submit"); executable(p) {
			return p, nil
		}
	}
	return "", errors.New("spark-submit is not on PATH and SPARK_HOME is unset: install Spark where the driver runs and put its bin on PATH (from atom's checkout: make deps-spark, which prints the line to export; then restart coordinator dev), run an image with Spark, or set SPARK_HOME in the job's env")
}

// PythonBeside returns the python3 in spark-submit's directory, if there
// is one: pip installs spark-submit into a virtualenv's bin, beside the
// python that imports pyspark, which that spark-submit needs ("Could not
// find valid SPARK_HOME" otherwise) and the job's Python code wants.
func PythonBeside(sparkSubmit string) string {
	p := filepath.Join(filepath.Dir(sparkSubmit), "python3")
	if executable(p) {
		return p
	}
	return ""
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// DiscoveryScriptPath is where WriteDiscoveryScript writes task's GPU
// discovery script: in dir, the task's temporary directory.
func DiscoveryScriptPath(dir, task string) string {
	return filepath.Join(dir, "atom-"+task+"-gpus")
}

// WriteDiscoveryScript writes path, an executable shell script that runs
// `ATOM gpus --spark`, atom printing Spark's JSON for the task's GPUs
// ({"name":"gpu","addresses":["0","1"]}). Spark runs a discovery script
// by its path, without arguments, and needs it executable, so atom's
// subcommand gets a script of its own.
func WriteDiscoveryScript(path, atom string) error {
	if atom == "" || !filepath.IsAbs(atom) {
		return fmt.Errorf("the driver has GPUs and atom's binary is unknown (ATOM_BIN %q): atom sets it to itself, the GPU discovery script Spark runs (atom gpus --spark)", atom)
	}
	script := "#!/bin/sh\n# Spark's GPU discovery script: the GPUs atom allocated this task.\nexec " + shellQuote(atom) + " gpus --spark\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write the GPU discovery script Spark runs: %w (set TMPDIR to a writable directory)", err)
	}
	return os.Chmod(path, 0o755) // whatever the umask
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
