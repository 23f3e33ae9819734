package spark

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
)

// Version is this job type's version.
const Version = "1.0.0"

// JobType is the Spark job type. The driver (replica 0) runs
// spark-submit in client mode: on Kubernetes with a k8s:// master, its
// executors Pods the coordinator binds; on the local backend in local
// mode, its executors threads of its own.
type JobType struct {
	// Log receives the note a local-mode driver starts with (LocalNote);
	// nil is file descriptor 2, the task's log: a plugin process's
	// stderr, which atom passes on line by line (go-plugin's Serve
	// points os.Stderr elsewhere, so not os.Stderr).
	Log io.Writer
}

// stderr is file descriptor 2, whatever os.Stderr has become.
var stderr = os.NewFile(uintptr(syscall.Stderr), "/dev/stderr")

// New returns the Spark job type.
func New() plugin.JobType { return JobType{} }

// Info implements plugin.JobType.
func (JobType) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: string(structs.KindSpark), APIVersions: []string{"v1"}, Version: Version}, nil
}

// ExecutorPodTemplatePath is where Prepare writes the executor pod
// template of the driver in Pod pod: in the temporary directory (TMPDIR).
func ExecutorPodTemplatePath(pod string) string {
	return filepath.Join(os.TempDir(), "atom-"+pod+"-executor-pod.yaml")
}

// OnKubernetes reports whether a task's environment is a Kubernetes
// backend's: it sets ATOM_NAMESPACE (and an image may set
// ATOM_KUBERNETES_API); the local backend sets neither.
func OnKubernetes(env map[string]string) bool {
	return env["ATOM_NAMESPACE"] != "" || env["ATOM_KUBERNETES_API"] != ""
}

// APIServerOf returns the API server's URL as the driver's Pod reaches
// it: ATOM_KUBERNETES_API when the image sets it; else the `kubernetes`
// Service's address, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT,
// which the kubelet gives every container (client-go's in-cluster
// configuration reads the same), so no cluster DNS is needed; else ""
// (Command's DefaultAPIServer, through DNS).
func APIServerOf(env map[string]string) string {
	if api := env["ATOM_KUBERNETES_API"]; api != "" {
		return api
	}
	host, port := env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]
	if host == "" || port == "" {
		return ""
	}
	return "https://" + net.JoinHostPort(host, port)
}

// Prepare implements plugin.JobType: the driver's spark-submit line. A
// driver with GPUs first gets its discovery script (WriteDiscoveryScript,
// in TMPDIR). On Kubernetes (OnKubernetes) the line is Command's, against
// the API server APIServerOf finds, with the driver's pod IP filled in
// (atom runs the line itself, so no Kubernetes expands $(ATOM_POD_IP) for
// it), and for a job with tolerations the
// executor pod template (ExecutorPodTemplate) is written first, to
// ExecutorPodTemplatePath. Elsewhere (the local backend) it is
// LocalCommand's, run by the spark-submit FindSparkSubmit finds, with
// PYSPARK_PYTHON the python3 beside it (a virtualenv's) unless the job
// sets PYSPARK_PYTHON or PYSPARK_DRIVER_PYTHON, SPARK_LOCAL_IP
// 127.0.0.1 and SPARK_LOCAL_DIRS its TMPDIR unless it sets them (or
// spark.local.dir); LocalNote goes to the log.
func (jt JobType) Prepare(_ context.Context, _ string, t plugin.Task) (plugin.Exec, error) {
	if t.Replica != 0 {
		return plugin.Exec{}, fmt.Errorf("a spark job has one replica, its driver; replica %d has nothing to run", t.Replica)
	}
	var j structs.Job
	if err := json.Unmarshal(t.JobJSON, &j); err != nil || j.Spark == nil {
		return plugin.Exec{}, fmt.Errorf("the job's spark section is missing (ATOM_JOB_SPEC): the backend passes the job as accepted")
	}
	d, err := driverOf(t, &j)
	if err != nil {
		return plugin.Exec{}, err
	}
	if !OnKubernetes(t.Env) {
		return jt.local(t, &j, d)
	}
	pod := t.Env["ATOM_POD_NAME"]
	if pod == "" {
		pod = t.ID
	}
	ns := t.Env["ATOM_NAMESPACE"]
	if ns == "" {
		ns = j.Spark.Namespace
	}
	// The executors run the driver's image: the job's, or the cluster's
	// default, which the backend names in ATOM_IMAGE.
	in := Input{Job: &j, DriverPod: pod, Namespace: ns, APIServer: APIServerOf(t.Env), Image: t.Env["ATOM_IMAGE"], Driver: d}
	tmpl, err := ExecutorPodTemplate(&j)
	if err != nil {
		return plugin.Exec{}, err
	}
	if tmpl != nil {
		in.ExecutorPodTemplateFile = ExecutorPodTemplatePath(pod)
	}
	argv, err := Command(in)
	if err != nil {
		return plugin.Exec{}, err
	}
	if tmpl != nil {
		if err := os.WriteFile(in.ExecutorPodTemplateFile, tmpl, 0o644); err != nil {
			return plugin.Exec{}, fmt.Errorf("write the executor pod template that gives executors the job's tolerations: %w (set TMPDIR to a writable directory)", err)
		}
	}
	ip := t.Env[DefaultDriverHostEnv]
	if ip == "" {
		return plugin.Exec{}, fmt.Errorf("%s is not set: the Kubernetes backend sets it to the driver pod's IP (status.podIP)", DefaultDriverHostEnv)
	}
	ref := "$(" + DefaultDriverHostEnv + ")"
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, ref, ip)
	}
	return plugin.Exec{Argv: argv}, nil
}

// driverOf reads the driver's allocation from the task's environment
// (ATOM_CPU_MILLI, ATOM_MEMORY_BYTES; the job's resources when atom runs
// standalone) and writes its GPU discovery script when it has GPUs.
func driverOf(t plugin.Task, j *structs.Job) (Driver, error) {
	d := Driver{MilliCPU: j.Resources.MilliCPU, Memory: j.Resources.Memory, GPUs: t.Accelerators}
	for _, v := range []struct {
		name string
		to   *int64
	}{{"ATOM_CPU_MILLI", &d.MilliCPU}, {"ATOM_MEMORY_BYTES", &d.Memory}} {
		s, ok := t.Env[v.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return d, fmt.Errorf("%s=%q is not a count: the backend sets it to the task's allocation", v.name, s)
		}
		*v.to = n
	}
	if d.GPUs > 0 {
		dir := t.Env["TMPDIR"]
		if dir == "" {
			dir = os.TempDir()
		}
		d.DiscoveryScript = DiscoveryScriptPath(dir, t.ID)
		if err := WriteDiscoveryScript(d.DiscoveryScript, t.Env["ATOM_BIN"]); err != nil {
			return d, err
		}
	}
	return d, nil
}

// local prepares a driver in local mode.
func (jt JobType) local(t plugin.Task, j *structs.Job, d Driver) (plugin.Exec, error) {
	submit, err := FindSparkSubmit(t.Env)
	if err != nil {
		return plugin.Exec{}, err
	}
	argv, err := LocalCommand(LocalInput{Job: j, SparkSubmit: submit, Driver: d})
	if err != nil {
		return plugin.Exec{}, err
	}
	env := map[string]string{}
	if py := PythonBeside(submit); py != "" && t.Env["PYSPARK_PYTHON"] == "" && t.Env["PYSPARK_DRIVER_PYTHON"] == "" {
		env["PYSPARK_PYTHON"] = py
	}
	if t.Env["SPARK_LOCAL_IP"] == "" {
		env["SPARK_LOCAL_IP"] = "127.0.0.1"
	}
	// Spark's scratch (shuffle and spill files, spark.local.dir) in the
	// task's own temporary directory, which goes with the task, unless
	// the job says where: the variable, which Spark's local mode reads
	// before spark.local.dir (and, as that property, without a warning
	// that a cluster manager would override it).
	if _, own := j.Spark.SparkConf["spark.local.dir"]; !own && t.Env["SPARK_LOCAL_DIRS"] == "" && t.Env["TMPDIR"] != "" {
		env["SPARK_LOCAL_DIRS"] = t.Env["TMPDIR"]
	}
	w := jt.Log
	if w == nil {
		w = stderr
	}
	fmt.Fprintln(w, LocalNote(j, d))
	return plugin.Exec{Argv: argv, Env: env}, nil
}
