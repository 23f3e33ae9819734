// Package spark builds the spark-submit command line of a kind: spark job.
//
// The driver runs in client mode in the pod atom placed for the job's
// replica 0, so atom accounts for it like any task. The driver asks
// Kubernetes for executor Pods that:
//   - name atom's coordinator as their scheduler, which binds them within
//     the job's quota;
//   - carry the driver pod's name (spark.kubernetes.driver.pod.name), so
//     Spark makes that pod their owner and they are deleted with it: a
//     killed, preempted or cancelled driver leaves no executor behind;
//   - carry the label atom.io/job=<job ID>;
//   - mount the job's volumes (its PersistentVolumeClaims) where the
//     driver's Pod does;
//   - tolerate what the job tolerates (a NoExecute taint would evict them
//     otherwise): a job with tolerations gets an executor pod template
//     (ExecutorPodTemplate, spark.kubernetes.executor.podTemplateFile,
//     Spark 3.0 or later) holding them, which the job type writes.
//
// Property names follow "Running Spark on Kubernetes"
// (https://spark.apache.org/docs/latest/running-on-kubernetes.html,
// section Configuration) and, for dynamic allocation and GPUs, "Spark
// Configuration" (https://spark.apache.org/docs/latest/configuration.html,
// sections Dynamic Allocation and Custom Resource Scheduling). The
// executor node selector and spark.kubernetes.scheduler.name need Spark
// 3.3 or later.
//
// The package is a pure builder: no I/O, no plugin framework.
package spark

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of Input.
const (
	DefaultSchedulerName = "atom"
	// DefaultAPIServer is the API server as seen from a pod. Spark wants
	// the port even when it is the scheme's default.
	DefaultAPIServer = "https://kubernetes.default.svc:443"
	// DefaultDriverHostEnv is the variable holding the driver pod's IP,
	// which the Kubernetes backend sets from status.podIP.
	DefaultDriverHostEnv = "ATOM_POD_IP"
)

// JobLabel is the executor Pods' label naming their job.
const JobLabel = "atom.io/job"

// ExecutorVolumeConf starts the properties that mount a job's volume
// (a PersistentVolumeClaim) in its executor Pods, followed by the
// volume's name ("Running Spark on Kubernetes", Using Kubernetes
// Volumes).
const ExecutorVolumeConf = "spark.kubernetes.executor.volumes.persistentVolumeClaim."

// Input is what Command needs beyond the job.
type Input struct {
	Job       *structs.Job // kind spark, with its ID and Spark section
	DriverPod string       // the pod the driver runs in: the job's replica 0
	Namespace string       // that pod's namespace, which executors share
	// DriverHostEnv names the variable holding the driver pod's IP. The
	// line refers to it as $(NAME), Kubernetes' syntax for dependent
	// variables; whoever runs the line without Kubernetes expanding its
	// args must replace that reference. Default DefaultDriverHostEnv.
	DriverHostEnv string
	Image         string // executors' image; default the job's image
	SchedulerName string // the coordinator's scheduler name; default DefaultSchedulerName
	APIServer     string // Kubernetes API server URL; default DefaultAPIServer
	// ExecutorPodTemplateFile is where the driver finds the executor pod
	// template (ExecutorPodTemplate) of a job with tolerations; required
	// for such a job, unused for others.
	ExecutorPodTemplateFile string
	// Driver is what the driver's task was allocated; a Memory of 0 is
	// the job's (resources.memory).
	Driver Driver
}

// Command returns the spark-submit argv for in: options (the driver's
// heap, --driver-memory, from its memory: see Driver), then --conf
// properties in a fixed order (the driver's GPUs, atom's, executor node
// selectors by key, the job's volumes in its executors, the executor pod
// template of a job with tolerations, the spec's sparkConf by key), then
// the application and its arguments.
func Command(in Input) ([]string, error) {
	in, err := in.withDefaults()
	if err != nil {
		return nil, err
	}
	j, s := in.Job, in.Job.Spark
	e := s.Executor
	argv := []string{"spark-submit",
		"--master", "k8s://" + in.APIServer,
		"--deploy-mode", "client",
		"--name", j.Name,
	}
	if s.MainClass != "" {
		argv = append(argv, "--class", s.MainClass)
	}
	d := in.Driver
	if d.Memory == 0 {
		d.Memory = j.Resources.Memory
	}
	opts, err := d.options()
	if err != nil {
		return nil, err
	}
	argv = append(argv, opts...)
	conf := func(k, v string) { argv = append(argv, "--conf", k+"="+v) }
	conf("spark.kubernetes.namespace", in.Namespace)
	conf("spark.kubernetes.driver.pod.name", in.DriverPod)
	conf("spark.driver.host", "$("+in.DriverHostEnv+")")
	conf("spark.kubernetes.container.image", in.Image)
	conf("spark.kubernetes.authenticate.driver.serviceAccountName", s.ServiceAccount)
	conf("spark.kubernetes.scheduler.name", in.SchedulerName)
	conf("spark.kubernetes.executor.label."+JobLabel, string(j.ID))
	conf("spark.executor.cores", strconv.Itoa(e.Cores))
	conf("spark.executor.memory", memory(e.Memory))
	// Always given, Spark's default where the spec has none: each
	// executor Pod then asks for exactly the memory atom charged it.
	conf("spark.executor.memoryOverhead", memory(e.ExecutorMemoryOverhead()))
	if e.MilliCPURequest > 0 {
		conf("spark.kubernetes.executor.request.cores", resource.NewMilliQuantity(e.MilliCPURequest, resource.DecimalSI).String())
	}
	if d := s.DynamicAllocation; d != nil {
		// No external shuffle service on Kubernetes: executors keep
		// their shuffle files and are released once nothing needs them.
		conf("spark.dynamicAllocation.enabled", "true")
		conf("spark.dynamicAllocation.shuffleTracking.enabled", "true")
		conf("spark.dynamicAllocation.minExecutors", strconv.Itoa(d.MinExecutors))
		conf("spark.dynamicAllocation.initialExecutors", strconv.Itoa(d.InitialExecutors))
		conf("spark.dynamicAllocation.maxExecutors", strconv.Itoa(d.MaxExecutors))
	} else {
		conf("spark.executor.instances", strconv.Itoa(e.Instances))
	}
	if g := e.GPU; g != nil {
		conf("spark.executor.resource.gpu.amount", strconv.FormatInt(g.Amount, 10))
		conf("spark.executor.resource.gpu.vendor", g.Vendor)
		conf("spark.executor.resource.gpu.discoveryScript", g.DiscoveryScript)
		conf("spark.task.resource.gpu.amount", TaskGPUAmount(g.Amount, e.Cores))
	}
	for _, k := range sortedKeys(e.NodeSelector) {
		conf("spark.kubernetes.executor.node.selector."+k, e.NodeSelector[k])
	}
	for _, v := range j.Volumes {
		// The job's claims, mounted in the driver's Pod by the backend,
		// in every executor too: executors read the job's input and
		// write its output.
		pre := ExecutorVolumeConf + v.Name + "."
		conf(pre+"mount.path", v.MountPath)
		conf(pre+"mount.readOnly", strconv.FormatBool(v.ReadOnly))
		conf(pre+"options.claimName", v.Claim)
	}
	if len(j.Tolerations) > 0 {
		conf(ExecutorPodTemplateConf, in.ExecutorPodTemplateFile)
	}
	for _, k := range sortedKeys(s.SparkConf) {
		conf(k, s.SparkConf[k])
	}
	argv = append(argv, s.MainApplicationFile)
	return append(argv, s.Arguments...), nil
}

// envName matches the variable names a $(NAME) reference may hold.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// withDefaults checks in and fills in its defaults.
func (in Input) withDefaults() (Input, error) {
	j := in.Job
	switch {
	case j == nil:
		return in, errors.New("spark: no job given")
	case j.Kind != structs.KindSpark:
		return in, fmt.Errorf("spark: job %s is of kind %s: only spark jobs run spark-submit", j.ID, j.Kind)
	case j.Spark == nil:
		return in, fmt.Errorf("spark: job %s has no spark section", j.ID)
	case j.ID == "" || len(validation.IsValidLabelValue(string(j.ID))) > 0:
		return in, fmt.Errorf("spark: job ID %q is not allowed: executors carry it as a label value (submit the job first)", j.ID)
	}
	if err := j.Spark.Check(); err != nil {
		return in, fmt.Errorf("spark: job %s: %w", j.ID, err)
	}
	switch {
	case in.DriverPod == "":
		return in, errors.New("spark: no driver pod given: executors name it as their owner")
	case len(validation.IsDNS1123Subdomain(in.DriverPod)) > 0:
		return in, fmt.Errorf("spark: driver pod name %q is not allowed: use a pod name (a DNS-1123 subdomain)", in.DriverPod)
	case in.Namespace == "":
		return in, errors.New("spark: no driver pod namespace given: executors share it")
	case len(validation.IsDNS1123Label(in.Namespace)) > 0:
		return in, fmt.Errorf("spark: driver pod namespace %q is not allowed: use a namespace name (a DNS-1123 label)", in.Namespace)
	}
	if ns := j.Spark.Namespace; ns != "" && ns != in.Namespace {
		return in, fmt.Errorf("spark: the driver pod runs in namespace %s but job %s asks for %s: executors must share their owner's namespace", in.Namespace, j.ID, ns)
	}
	if in.DriverHostEnv == "" {
		in.DriverHostEnv = DefaultDriverHostEnv
	}
	if !envName.MatchString(in.DriverHostEnv) {
		return in, fmt.Errorf("spark: driver host variable %q is not allowed: use a variable name such as %s", in.DriverHostEnv, DefaultDriverHostEnv)
	}
	if in.Image == "" {
		in.Image = j.Image
	}
	if in.Image == "" || strings.ContainsAny(in.Image, " \t\n") {
		return in, fmt.Errorf("spark: executor image %q is not allowed: give the job an image", in.Image)
	}
	if in.SchedulerName == "" {
		in.SchedulerName = DefaultSchedulerName
	}
	if len(validation.IsDNS1123Subdomain(in.SchedulerName)) > 0 {
		return in, fmt.Errorf("spark: scheduler name %q is not allowed: use a scheduler name such as %s (a DNS-1123 subdomain)", in.SchedulerName, DefaultSchedulerName)
	}
	if len(j.Tolerations) > 0 && (in.ExecutorPodTemplateFile == "" || !strings.HasPrefix(in.ExecutorPodTemplateFile, "/") ||
		strings.ContainsAny(in.ExecutorPodTemplateFile, " \t\n")) {
		return in, fmt.Errorf("spark: executor pod template file %q is not allowed: job %s has tolerations, which its executors get from that template; give an absolute path", in.ExecutorPodTemplateFile, j.ID)
	}
	if in.APIServer == "" {
		in.APIServer = DefaultAPIServer
	}
	api, err := apiServer(in.APIServer)
	if err != nil {
		return in, err
	}
	in.APIServer = api
	return in, nil
}

// apiServer checks an API server URL and adds the scheme's port if it
// has none, as Spark's master URL requires.
func apiServer(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("spark: API server %q is not allowed: use a URL such as %s", s, DefaultAPIServer)
	}
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		u.Host += ":" + port
	}
	return u.Scheme + "://" + u.Host, nil
}

// TaskGPUAmount returns spark.task.resource.gpu.amount for executors of
// gpus GPUs and cores cores: the share of the GPUs that lets every core
// run a task at once. Spark takes whole numbers, or fractions of at most
// 0.5 whose inverse it rounds down to the tasks that share one GPU: 1 GPU
// for 4 cores is 0.25; 2 GPUs for 3 cores 0.5 (two tasks per GPU, four
// slots for three cores); 4 GPUs for 2 cores 2. Fractions are truncated
// to 9 decimals, so their inverse never rounds below the share intended.
func TaskGPUAmount(gpus int64, cores int) string {
	c := int64(cores)
	if gpus >= c {
		return strconv.FormatInt(gpus/c, 10)
	}
	perGPU := (c + gpus - 1) / gpus // tasks sharing one GPU, at least 2
	frac := fmt.Sprintf("%09d", 1_000_000_000/perGPU)
	return "0." + strings.TrimRight(frac, "0")
}

// memory renders bytes (whole MiB) as Spark does: 16g, or 1536m.
func memory(b int64) string {
	if b%(1<<30) == 0 {
		return strconv.FormatInt(b>>30, 10) + "g"
	}
	return strconv.FormatInt(b>>20, 10) + "m"
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
