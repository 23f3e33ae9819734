package structs

import (
	"fmt"
	"strings"
)

// Defaults and bounds of a spark section.
const (
	DefaultSparkExecutorInstances  = 2       // Spark's own default on Kubernetes
	DefaultSparkExecutorCores      = 1       // Spark's own default on Kubernetes
	DefaultSparkExecutorMemory     = 1 << 30 // 1Gi: Spark's own default, 1g
	DefaultSparkDriverCores        = 1       // Spark's own default, spark.driver.cores
	DefaultSparkDriverMemory       = 1 << 30 // 1Gi: the heap, Spark's own default, 1g
	DefaultSparkGPUVendor          = "nvidia.com"
	DefaultSparkGPUDiscoveryScript = "/opt/spark/examples/src/main/scripts/getGpusResources.sh"
	DefaultSparkServiceAccount     = "spark"

	MaxSparkExecutors     = MaxReplicas
	MaxSparkExecutorCores = 1024
	// MinSparkExecutorMemory is the least executor memory Spark starts with
	// (1.5 × the 300 MiB it reserves).
	MinSparkExecutorMemory = 450 << 20
	// MinSparkDriverResources is the least memory a spark job's driver is
	// allocated: the least heap and Spark's least memory overhead.
	MinSparkDriverResources = MinSparkExecutorMemory + MinSparkMemoryOverhead

	mebibyte = 1 << 20
)

// Spark is a spark job's application and executors as accepted: a
// SparkSpec with its defaults applied and its quantities converted.
//
// The driver is the job's replica 0, the task atom places, and runs there
// in client mode; the job's resources are the driver's. Executors are not
// replicas of the job: the driver asks Kubernetes for them as Pods that name
// atom's coordinator as their scheduler, which binds them within the job's
// quota, and they are owned by the driver's pod, so they die with it.
type Spark struct {
	MainApplicationFile string            `json:"mainApplicationFile"`
	MainClass           string            `json:"mainClass,omitempty"` // empty for Python and R
	Arguments           []string          `json:"arguments,omitempty"`
	SparkConf           map[string]string `json:"sparkConf,omitempty"` // no key IsAtomSparkConf reports
	Executor            SparkExecutor     `json:"executor"`
	// DynamicAllocation is nil when the job runs Executor.Instances executors.
	DynamicAllocation *SparkDynamicAllocation `json:"dynamicAllocation,omitempty"`
	ServiceAccount    string                  `json:"serviceAccount"`
	Namespace         string                  `json:"namespace,omitempty"` // empty: the backend's job namespace
}

// SparkExecutor is what each executor asks for.
type SparkExecutor struct {
	Instances int `json:"instances,omitempty"` // 0 with dynamic allocation
	Cores     int `json:"cores"`
	// MilliCPURequest is what each executor Pod asks for of CPU
	// (spark.kubernetes.executor.request.cores); 0: Cores whole CPUs.
	MilliCPURequest int64             `json:"milliCPURequest,omitempty"`
	Memory          int64             `json:"memory"`                   // bytes, whole MiB
	MemoryOverhead  int64             `json:"memoryOverhead,omitempty"` // bytes, whole MiB; 0: Spark's default
	GPU             *SparkGPU         `json:"gpu,omitempty"`
	NodeSelector    map[string]string `json:"nodeSelector,omitempty"`
}

// SparkGPU is an executor's accelerators: Amount of Type, exposed by the
// Kubernetes device plugin as Vendor/gpu and found by DiscoveryScript.
type SparkGPU struct {
	Type            string `json:"type"`
	Amount          int64  `json:"amount"`
	Vendor          string `json:"vendor"`
	DiscoveryScript string `json:"discoveryScript"`
}

// SparkDynamicAllocation bounds the executors Spark scales between.
type SparkDynamicAllocation struct {
	MinExecutors     int `json:"minExecutors"`
	InitialExecutors int `json:"initialExecutors"`
	MaxExecutors     int `json:"maxExecutors"`
}

// MaxExecutors returns the most executors the job may run at once.
func (s *Spark) MaxExecutors() int {
	if s.DynamicAllocation != nil {
		return s.DynamicAllocation.MaxExecutors
	}
	return s.Executor.Instances
}

// Check refuses a Spark section that ParseJobSpec would not have produced:
// it guards consumers of jobs built in code. Messages name the spec field.
func (s *Spark) Check() error {
	e := s.Executor
	switch {
	case s.MainApplicationFile == "":
		return &FieldError{Field: "spark.mainApplicationFile", Msg: "is required"}
	case e.Cores < 1:
		return bad("spark.executor.cores", e.Cores, "use 1 or more whole cores")
	case e.Memory < 1 || e.Memory%mebibyte != 0 || e.MemoryOverhead < 0 || e.MemoryOverhead%mebibyte != 0:
		return bad("spark.executor.memory", e.Memory, "use whole MiB (memoryOverhead %d bytes)", e.MemoryOverhead)
	case s.ServiceAccount == "":
		return &FieldError{Field: "spark.serviceAccount", Msg: "is required"}
	}
	if g := e.GPU; g != nil {
		switch {
		case g.Type == "" || g.Type == "any":
			return bad("spark.executor.gpu.type", g.Type, "name one accelerator type, such as A100")
		case g.Amount < 1:
			return bad("spark.executor.gpu.amount", g.Amount, "use 1 or more")
		case g.Vendor == "" || g.DiscoveryScript == "":
			return &FieldError{Field: "spark.executor.gpu", Msg: "needs a vendor and a discoveryScript"}
		}
	}
	d := s.DynamicAllocation
	if d == nil {
		if e.Instances < 1 {
			return bad("spark.executor.instances", e.Instances, "use 1 or more")
		}
		return nil
	}
	if e.Instances != 0 {
		return bad("spark.executor.instances", e.Instances, "dynamic allocation sizes the executors")
	}
	return checkExecutorBounds(int64(d.MinExecutors), int64(d.InitialExecutors), int64(d.MaxExecutors))
}

// checkExecutorBounds refuses dynamic allocation bounds out of order.
func checkExecutorBounds(lo, initial, hi int64) error {
	const field = "spark.dynamicAllocation."
	if err := checkRange(field+"maxExecutors", hi, 1, MaxSparkExecutors, ""); err != nil {
		return err
	}
	if err := checkRange(field+"minExecutors", lo, 0, MaxSparkExecutors, ""); err != nil {
		return err
	}
	if lo > hi {
		return bad(field+"minExecutors", lo, "use at most maxExecutors (%d)", hi)
	}
	if initial < lo || initial > hi {
		return bad(field+"initialExecutors", initial, "use minExecutors (%d) to maxExecutors (%d)", lo, hi)
	}
	return nil
}

// atomSparkConf lists the Spark properties atom sets on every spark-submit
// line (see plugins/spark), so a spec's sparkConf may not: a key ending in
// '.' stands for every key it prefixes. from names the spec field that
// sets it instead, if any.
var atomSparkConf = []struct{ key, from string }{
	{"spark.master", ""},
	{"spark.submit.deployMode", ""},
	{"spark.app.name", "name"},
	{"spark.kubernetes.namespace", "spark.namespace"},
	{"spark.kubernetes.driver.pod.name", ""},
	{"spark.driver.host", ""},
	{"spark.kubernetes.container.image", "image"},
	{"spark.kubernetes.authenticate.driver.serviceAccountName", "spark.serviceAccount"},
	{"spark.kubernetes.scheduler.name", ""},
	{"spark.kubernetes.driver.scheduler.name", ""},
	{"spark.kubernetes.executor.scheduler.name", ""},
	{"spark.kubernetes.executor.label.atom.io/", ""},
	{"spark.driver.memory", "resources.memory or spark.driver.memory (the driver's heap is its memory less Spark's overhead)"},
	{"spark.driver.cores", "resources.cpu or spark.driver.cores"},
	{"spark.driver.resource.gpu.", "resources.accelerators (the driver's GPUs)"},
	{"spark.executor.instances", "spark.executor.instances"},
	{"spark.executor.cores", "spark.executor.cores"},
	{"spark.kubernetes.executor.request.cores", "spark.executor.coreRequest"},
	{"spark.executor.memory", "spark.executor.memory"},
	{"spark.executor.memoryOverhead", "spark.executor.memoryOverhead"},
	{"spark.dynamicAllocation.enabled", "spark.dynamicAllocation"},
	{"spark.dynamicAllocation.shuffleTracking.enabled", "spark.dynamicAllocation"},
	{"spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.minExecutors"},
	{"spark.dynamicAllocation.initialExecutors", "spark.dynamicAllocation.initialExecutors"},
	{"spark.dynamicAllocation.maxExecutors", "spark.dynamicAllocation.maxExecutors"},
	{"spark.executor.resource.gpu.", "spark.executor.gpu"},
	{"spark.task.resource.gpu.", "spark.executor.gpu"},
	{"spark.kubernetes.node.selector.", "spark.executor.nodeSelector"},
	{"spark.kubernetes.executor.node.selector.", "spark.executor.nodeSelector"},
}

// SparkExecutorPodTemplateConf names the executor pod template file,
// which atom sets for a job with tolerations (see plugins/spark), so a
// spec's sparkConf may set it only for a job without.
const SparkExecutorPodTemplateConf = "spark.kubernetes.executor.podTemplateFile"

// IsAtomSparkConf reports whether atom sets the Spark property key itself,
// so that a spec's sparkConf may not.
func IsAtomSparkConf(key string) bool {
	_, ok := atomSparkConfRule(key)
	return ok
}

// atomSparkConfRule returns the message for a sparkConf key atom sets.
func atomSparkConfRule(key string) (string, bool) {
	for _, r := range atomSparkConf {
		match, name := key == r.key, r.key
		if strings.HasSuffix(r.key, ".") || strings.HasSuffix(r.key, "/") {
			match, name = strings.HasPrefix(key, r.key), r.key+"*"
		}
		if !match {
			continue
		}
		msg := fmt.Sprintf("is not allowed: atom sets %s itself", name)
		if r.from != "" {
			msg += ": use " + r.from
		}
		return msg, true
	}
	return "", false
}

// MinSparkMemoryOverhead is Spark's least executor memory overhead: with
// spark.executor.memoryOverhead unset an executor Pod asks for memory
// plus max(384 MiB, 10% of memory) ("Spark Configuration",
// spark.executor.memoryOverhead and spark.executor.memoryOverheadFactor).
const MinSparkMemoryOverhead = 384 << 20

// ExecutorMemoryOverhead returns the overhead each executor Pod asks for
// on top of Memory: MemoryOverhead, or Spark's default, max(384 MiB, 10%
// of Memory) rounded down to whole MiB.
func (e SparkExecutor) ExecutorMemoryOverhead() int64 {
	if e.MemoryOverhead > 0 {
		return e.MemoryOverhead
	}
	return SparkMemoryOverhead(e.Memory)
}

// SparkMemoryOverhead is Spark's default memory overhead of a JVM of heap
// bytes, driver or executor: max(384 MiB, 10% of heap) rounded down to
// whole MiB (spark.driver.memoryOverhead, spark.executor.memoryOverhead).
func SparkMemoryOverhead(heap int64) int64 {
	return max(MinSparkMemoryOverhead, heap/10/mebibyte*mebibyte)
}

// SparkDriverHeap returns the heap atom gives a Spark driver allocated
// alloc bytes (--driver-memory): the most whole MiB H with H +
// SparkMemoryOverhead(H) <= alloc, so the JVM's off-heap memory (metaspace,
// thread stacks, direct buffers, the Python workers' share) has the room
// Spark reserves for it; 0 when alloc cannot hold the overhead. A driver
// sized by spark.driver.memory M is allocated M + SparkMemoryOverhead(M),
// whose heap is M again.
func SparkDriverHeap(alloc int64) int64 {
	lo, hi := int64(0), alloc/mebibyte // in MiB: lo fits (or is 0), hi+1 does not
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if h := mid * mebibyte; h+SparkMemoryOverhead(h) <= alloc {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if h := lo * mebibyte; h+SparkMemoryOverhead(h) <= alloc {
		return h
	}
	return 0
}

// ExecutorResources returns what one executor Pod of the job asks for and
// atom allots it: its cores (or its core request), memory plus overhead,
// and its GPUs.
func (s *Spark) ExecutorResources() Resources {
	e := s.Executor
	r := Resources{MilliCPU: int64(e.Cores) * 1000, Memory: e.Memory + e.ExecutorMemoryOverhead()}
	if e.MilliCPURequest > 0 {
		r.MilliCPU = e.MilliCPURequest
	}
	if e.GPU != nil {
		r.AccelType, r.Accels = e.GPU.Type, e.GPU.Amount
	}
	return r
}

// ExecutorCharge returns the quota MaxExecutors executors charge, counted
// as Charge counts a shape (GPUs by type for GPU executors, else cpu and
// memory).
func (s *Spark) ExecutorCharge() ResourceList {
	return Charge(Shape{Replicas: s.MaxExecutors(), Resources: s.ExecutorResources()})
}
