package structs

// The spark: section of a kind: spark job spec; see SparkSpec.

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// SparkSpec is the spark: section that a kind: spark job must have (and
// no other kind may), named after Spark's own settings:
//
//	spark:
//	  mainApplicationFile: local:///opt/spark/jobs/clean.py
//	  arguments: [--day, 2024-05-01]
//	  driver: {cores: 2, memory: 4Gi}
//	  executor:
//	    cores: 4
//	    memory: 16Gi
//	    gpu: {type: A100, amount: 1}
//	    nodeSelector: {fabric: ib}
//	  dynamicAllocation: {minExecutors: 2, maxExecutors: 20}
//	  sparkConf: {spark.sql.shuffle.partitions: "400"}
//
// The driver is the job's replica 0: the task atom places, where atom runs
// spark-submit in client mode. replicas, resources and the rest of the job
// spec describe that driver, as for any kind; driver (cores, memory) is the
// Spark Operator's way to say the same, instead of resources. Executors are
// not replicas of the job: on Kubernetes the driver asks for them as Pods
// that name atom's coordinator as their scheduler, which binds them within
// the job's quota, and they are owned by the driver's pod, so they die with
// it. On the local backend Spark runs in local mode: its executors are
// threads of the driver, on the driver's cores.
//
// Defaults: executor.instances 2 (without dynamic allocation), cores 1,
// memory 1Gi, memoryOverhead Spark's own (10% of memory, at least 384Mi);
// gpu.amount 1, gpu.vendor nvidia.com, gpu.discoveryScript Spark's example
// script in its image; dynamicAllocation.enabled true once the section is
// given, minExecutors 0, initialExecutors minExecutors (maxExecutors has no
// default: it bounds what the job is charged); serviceAccount spark;
// namespace the one atom runs the job's pods in. ToJob stores the result
// as the job's Spark.
type SparkSpec struct {
	// MainApplicationFile is the jar, Python or R file to run: a URI such
	// as local:///opt/spark/jobs/clean.py or s3a://bucket/clean.jar, or an
	// absolute path in the image. Required.
	MainApplicationFile string   `json:"mainApplicationFile,omitempty"`
	MainClass           string   `json:"mainClass,omitempty"` // JVM applications: the class to run
	Arguments           []string `json:"arguments,omitempty" spec:"multiline"`
	// SparkConf holds further Spark properties (spark.*), passed as --conf
	// in key order. Keys atom sets itself are refused (IsAtomSparkConf).
	SparkConf map[string]string `json:"sparkConf,omitempty"`
	// Driver sizes the driver (the job's replica 0) instead of resources.
	Driver            *SparkDriverSpec            `json:"driver,omitempty"`
	Executor          SparkExecutorSpec           `json:"executor,omitzero"`
	DynamicAllocation *SparkDynamicAllocationSpec `json:"dynamicAllocation,omitempty"`
	ServiceAccount    string                      `json:"serviceAccount,omitempty"` // the driver's; executors inherit it
	Namespace         string                      `json:"namespace,omitempty"`      // the driver's and the executors'
}

// SparkDriverSpec sizes the driver as the Spark Operator's driver section
// does: whole cores, and memory, the driver JVM's heap
// (spark.driver.memory, whole mebibytes). The driver's task is allocated
// cores CPUs and memory plus Spark's memory overhead, max(384Mi, 10% of
// memory), as the Operator sizes a driver Pod; atom gives the JVM memory
// as its heap. Defaults: cores 1, memory 1Gi (Spark's own, 1g). A spec
// gives either driver or resources: both size the same task.
type SparkDriverSpec struct {
	Cores  *int64   `json:"cores,omitempty"`  // 1..MaxSparkExecutorCores
	Memory Quantity `json:"memory,omitempty"` // JVM heap: "4Gi"
}

// SparkExecutorSpec is what each executor asks for. Memory quantities are
// whole mebibytes, as Spark counts them.
type SparkExecutorSpec struct {
	Instances *int64 `json:"instances,omitempty"` // 1..MaxSparkExecutors; not with dynamic allocation
	Cores     *int64 `json:"cores,omitempty"`     // whole cores, 1..MaxSparkExecutorCores
	// CoreRequest is the CPU each executor Pod asks for, and is charged,
	// instead of its cores (the Spark Operator's coreRequest,
	// spark.kubernetes.executor.request.cores): "500m" puts two one-core
	// executors on a CPU. Spark still runs cores tasks at once in each.
	CoreRequest    Quantity          `json:"coreRequest,omitempty"`
	Memory         Quantity          `json:"memory,omitempty"`         // JVM heap: "16Gi"
	MemoryOverhead Quantity          `json:"memoryOverhead,omitempty"` // off-heap, on top of memory
	GPU            *SparkGPUSpec     `json:"gpu,omitempty"`
	NodeSelector   map[string]string `json:"nodeSelector,omitempty"` // Kubernetes node labels, executors only
}

// SparkGPUSpec gives each executor Amount accelerators of Type. Type is
// required: executors are placed on it and charged to gpu/<type> quota.
type SparkGPUSpec struct {
	Type            string `json:"type,omitempty"`
	Amount          *int64 `json:"amount,omitempty"`          // 1..MaxAccelsPerNode
	Vendor          string `json:"vendor,omitempty"`          // device plugin domain: Vendor/gpu
	DiscoveryScript string `json:"discoveryScript,omitempty"` // absolute path in the image
}

// SparkDynamicAllocationSpec lets Spark scale executors between
// MinExecutors and MaxExecutors, starting at InitialExecutors.
type SparkDynamicAllocationSpec struct {
	Enabled          *bool  `json:"enabled,omitempty"`
	MinExecutors     *int64 `json:"minExecutors,omitempty"`
	InitialExecutors *int64 `json:"initialExecutors,omitempty"`
	MaxExecutors     *int64 `json:"maxExecutors,omitempty"`
}

// spark checks the spark section against the kind and converts it.
func (s *JobSpec) spark(j *Job) error {
	switch {
	case s.Kind == KindSpark && s.Spark == nil:
		return &FieldError{Field: "spark", Msg: "is required for kind spark: give at least spark.mainApplicationFile"}
	case s.Kind != KindSpark && s.Spark != nil:
		return &FieldError{Field: "spark", Msg: fmt.Sprintf("is not allowed for kind %s: only kind spark takes a spark section", s.Kind)}
	case s.Spark == nil:
		return nil
	case s.Replicas != nil && *s.Replicas != 1:
		return bad("replicas", *s.Replicas, "use 1 (or leave it out): a spark job's one replica is its driver; its executors are spark.executor.instances or spark.dynamicAllocation")
	case len(s.Command) > 0 || len(s.Args) > 0:
		field := "command"
		if len(s.Command) == 0 {
			field = "args"
		}
		return &FieldError{Field: field, Msg: "is not allowed for kind spark: the driver runs spark-submit with spark.mainApplicationFile and spark.arguments"}
	}
	ss := s.Spark
	sp := &Spark{MainClass: ss.MainClass, Arguments: append([]string(nil), ss.Arguments...)}
	for _, step := range []func(*Spark) error{ss.application, ss.conf, ss.executor, ss.gpu, ss.dynamicAllocation, ss.account} {
		if err := step(sp); err != nil {
			return err
		}
	}
	if m := j.Resources.Memory; ss.Driver == nil && m > 0 && SparkDriverHeap(m) < MinSparkExecutorMemory {
		return bad("resources.memory", s.Resources.Memory, "a spark job's driver needs at least %s: Spark's least heap (%s) and its memory overhead (%s); or give spark.driver.memory, the heap",
			FormatBytes(MinSparkDriverResources), FormatBytes(MinSparkExecutorMemory), FormatBytes(MinSparkMemoryOverhead))
	}
	if _, ok := sp.SparkConf[SparkExecutorPodTemplateConf]; ok && len(s.Tolerations) > 0 {
		return &FieldError{Field: key("spark.sparkConf", SparkExecutorPodTemplateConf),
			Msg: "is not allowed with tolerations: atom writes the executor pod template itself, to give executors the job's tolerations"}
	}
	j.Spark = sp
	return nil
}

// driverResources returns the resources of the driver, the job's replica
// 0, that spark.driver gives: its cores, and its heap plus Spark's memory
// overhead; ok is false when the spec has no spark.driver (resources says
// them). n replicas of them must fit in 64 bits.
func (s *JobSpec) driverResources(n int64) (r Resources, ok bool, err error) {
	if s.Kind != KindSpark || s.Spark == nil || s.Spark.Driver == nil {
		return r, false, nil
	}
	const field = "spark.driver"
	if rs := s.Resources; rs.CPU != "" || rs.Memory != "" || rs.Accelerators != nil || len(rs.Devices) > 0 {
		return r, true, &FieldError{Field: field, Msg: "is not allowed with resources: both size the driver (the job's replica 0): give spark.driver (cores, memory) or resources (cpu, memory, accelerators), not both"}
	}
	d := s.Spark.Driver
	cores := int64(DefaultSparkDriverCores)
	if d.Cores != nil {
		cores = *d.Cores
		if err := checkRange(field+".cores", cores, 1, MaxSparkExecutorCores, " whole cores"); err != nil {
			return r, true, err
		}
	}
	heap := int64(DefaultSparkDriverMemory)
	if d.Memory != "" {
		if heap, err = sparkMemory(field+".memory", d.Memory, MinSparkExecutorMemory, ": Spark starts no driver with less"); err != nil {
			return r, true, err
		}
	}
	r = Resources{MilliCPU: cores * 1000, Memory: heap + SparkMemoryOverhead(heap)}
	if r.Memory < heap || n > math.MaxInt64/r.Memory {
		return r, true, bad(field+".memory", d.Memory, "it overflows 64 bits: ask for less")
	}
	return r, true, nil
}

var (
	uriScheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://`)
	javaClass = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$`)
)

// application checks the application file and main class.
func (ss *SparkSpec) application(sp *Spark) error {
	const field = "spark.mainApplicationFile"
	f := ss.MainApplicationFile
	if f == "" {
		return &FieldError{Field: field, Msg: "is required: name the application, such as local:///opt/spark/jobs/clean.py or s3a://bucket/clean.jar"}
	}
	if !validAppFile(f) {
		return bad(field, f, "use a URI such as local:///opt/spark/jobs/clean.py or s3a://bucket/clean.jar, or an absolute path in the image (no spaces, at most 4096 characters)")
	}
	if c := ss.MainClass; c != "" && (len(c) > 1024 || !javaClass.MatchString(c)) {
		return bad("spark.mainClass", c, "use a fully qualified class name such as org.example.Clean")
	}
	sp.MainApplicationFile = f
	return nil
}

// validAppFile accepts a clean absolute path or a URI with a scheme and a
// path; local:// and file:// URIs name no host (local:///opt/app.jar).
func validAppFile(f string) bool {
	if len(f) > 4096 || strings.ContainsAny(f, " \t") {
		return false
	}
	if strings.HasPrefix(f, "/") {
		return f != "/" && path.Clean(f) == f
	}
	u, err := url.Parse(f)
	if err != nil || !uriScheme.MatchString(f) || u.Path == "" || u.Path == "/" {
		return false
	}
	return u.Host == "" || (u.Scheme != "local" && u.Scheme != "file")
}

var sparkConfKey = regexp.MustCompile(`^spark\.[^\s=]{1,250}$`)

// conf checks the extra Spark properties.
func (ss *SparkSpec) conf(sp *Spark) error {
	const field = "spark.sparkConf"
	for _, k := range sortedKeys(ss.SparkConf) {
		if !sparkConfKey.MatchString(k) {
			return bad(field, k, "use a Spark property name: spark. and up to 250 more characters, without spaces or '='")
		}
		if msg, ok := atomSparkConfRule(k); ok {
			return &FieldError{Field: key(field, k), Msg: msg}
		}
	}
	sp.SparkConf = cloneMap(ss.SparkConf)
	return nil
}

// executor converts cores, the core request, memory and the node selector.
func (ss *SparkSpec) executor(sp *Spark) error {
	e, out := ss.Executor, &sp.Executor
	out.Cores = DefaultSparkExecutorCores
	if e.Cores != nil {
		if err := checkRange("spark.executor.cores", *e.Cores, 1, MaxSparkExecutorCores, " whole cores"); err != nil {
			return err
		}
		out.Cores = int(*e.Cores)
	}
	if e.CoreRequest != "" {
		var err error
		if out.MilliCPURequest, err = positive("spark.executor.coreRequest", e.CoreRequest, 1000, "millicores"); err != nil {
			return err
		}
	}
	out.Memory = DefaultSparkExecutorMemory
	if e.Memory != "" {
		var err error
		if out.Memory, err = sparkMemory("spark.executor.memory", e.Memory, MinSparkExecutorMemory, ": Spark starts no executor with less"); err != nil {
			return err
		}
	}
	if e.MemoryOverhead != "" {
		var err error
		if out.MemoryOverhead, err = sparkMemory("spark.executor.memoryOverhead", e.MemoryOverhead, mebibyte,
			", or leave it out for Spark's default (10% of memory, at least 384Mi)"); err != nil {
			return err
		}
		if out.MemoryOverhead > math.MaxInt64-out.Memory {
			return bad("spark.executor.memoryOverhead", e.MemoryOverhead, "with memory it overflows 64 bits: ask for less")
		}
	}
	if err := checkLabels("spark.executor.nodeSelector", e.NodeSelector); err != nil {
		return err
	}
	out.NodeSelector = cloneMap(e.NodeSelector)
	return nil
}

// sparkMemory converts a memory quantity of whole MiB, at least least;
// why follows the minimum in the message.
func sparkMemory(field string, q Quantity, least int64, why string) (int64, error) {
	b, err := unitValue(field, q, 1, "bytes")
	if err != nil {
		return 0, err
	}
	if b%mebibyte != 0 {
		return 0, bad(field, q, "use whole mebibytes, such as 512Mi or 16Gi: Spark counts memory in MiB")
	}
	if b < least {
		return 0, bad(field, q, "use at least %s%s", FormatBytes(least), why)
	}
	return b, nil
}

// gpu converts the executors' accelerators.
func (ss *SparkSpec) gpu(sp *Spark) error {
	g := ss.Executor.GPU
	if g == nil {
		return nil
	}
	const field = "spark.executor.gpu"
	switch {
	case g.Type == "":
		return &FieldError{Field: field + ".type", Msg: "is required with executor GPUs: name the accelerator type, such as A100, that executors run on and are charged for"}
	case g.Type == "any":
		return bad(field+".type", g.Type, "name one accelerator type, such as A100: executors are charged to gpu/<type> quota")
	}
	if err := ValidateTypeName(field+".type", g.Type); err != nil {
		return err
	}
	out := &SparkGPU{Type: g.Type, Amount: 1, Vendor: DefaultSparkGPUVendor, DiscoveryScript: DefaultSparkGPUDiscoveryScript}
	if g.Amount != nil {
		if err := checkRange(field+".amount", *g.Amount, 1, MaxAccelsPerNode, " (accelerators on one node)"); err != nil {
			return err
		}
		out.Amount = *g.Amount
	}
	if v := g.Vendor; v != "" {
		if len(validation.IsDNS1123Subdomain(v)) > 0 {
			return bad(field+".vendor", v, "use the device plugin's vendor domain, such as nvidia.com or amd.com")
		}
		out.Vendor = v
	}
	if p := g.DiscoveryScript; p != "" {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || len(p) > 1024 || strings.ContainsAny(p, " \t") {
			return bad(field+".discoveryScript", p, "use the absolute path of a script in the image, such as %s", DefaultSparkGPUDiscoveryScript)
		}
		out.DiscoveryScript = p
	}
	sp.Executor.GPU = out
	return nil
}

// dynamicAllocation sets either the executor bounds or the fixed count,
// and checks that the most executors the job may run fit in 64 bits.
func (ss *SparkSpec) dynamicAllocation(sp *Spark) error {
	d, inst := ss.DynamicAllocation, ss.Executor.Instances
	on := d != nil && (d.Enabled == nil || *d.Enabled)
	switch {
	case d != nil && !on && (d.MinExecutors != nil || d.InitialExecutors != nil || d.MaxExecutors != nil):
		return bad("spark.dynamicAllocation.enabled", false, "minExecutors, initialExecutors and maxExecutors need dynamic allocation: enable it or drop them")
	case !on:
		n := int64(DefaultSparkExecutorInstances)
		if inst != nil {
			n = *inst
			if err := checkRange("spark.executor.instances", n, 1, MaxSparkExecutors, ""); err != nil {
				return err
			}
		}
		sp.Executor.Instances = int(n)
	case inst != nil:
		return bad("spark.executor.instances", *inst, "dynamic allocation sizes the executors: use spark.dynamicAllocation.initialExecutors")
	case d.MaxExecutors == nil:
		return &FieldError{Field: "spark.dynamicAllocation.maxExecutors", Msg: "is required with dynamic allocation: name the most executors the job may run (they are charged to its quota)"}
	default:
		lo := int64(0)
		if d.MinExecutors != nil {
			lo = *d.MinExecutors
		}
		initial := lo
		if d.InitialExecutors != nil {
			initial = *d.InitialExecutors
		}
		if err := checkExecutorBounds(lo, initial, *d.MaxExecutors); err != nil {
			return err
		}
		sp.DynamicAllocation = &SparkDynamicAllocation{MinExecutors: int(lo), InitialExecutors: int(initial), MaxExecutors: int(*d.MaxExecutors)}
	}
	e := sp.Executor
	if n := int64(sp.MaxExecutors()); e.Memory+e.MemoryOverhead > math.MaxInt64/n {
		return bad("spark.executor.memory", ss.Executor.Memory, "%d executors of it overflow 64 bits: ask for less", n)
	}
	return nil
}

// account sets the service account and namespace.
func (ss *SparkSpec) account(sp *Spark) error {
	sp.ServiceAccount = DefaultSparkServiceAccount
	if a := ss.ServiceAccount; a != "" {
		if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
			return bad("spark.serviceAccount", a, "use a service account name: %s", ValidationText(errs))
		}
		sp.ServiceAccount = a
	}
	if ns := ss.Namespace; ns != "" {
		if err := ValidateObjectName("spark.namespace", ns); err != nil {
			return err
		}
		sp.Namespace = ns
	}
	return nil
}
