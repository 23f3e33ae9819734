package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec returns j as a user writes it: the fields of a JobSpec, defaults
// left out, quantities and durations as a spec spells them (cpu "500m",
// memory 16Gi, pendingTimeout 1h), nothing of j's status. Submitted
// again it makes the same job: ToJob of it gives j's spec fields back.
// What the spec said is read from what the job keeps, so where two
// spellings make the same job it shows one: a service's replicas are
// those it has now (a scale changes them), a spark driver sized by a
// whole number of GiB of heap shows as spark.driver, else as resources,
// and a config names the project it came from only when that is not the
// job's own.
func (j *Job) Spec() *JobSpec {
	s := &JobSpec{Kind: j.Kind, Name: j.Name, Project: j.Project, Labels: cloneMap(j.Labels),
		Image: j.Image, Command: slices.Clone(j.Command), Args: slices.Clone(j.Args), Env: cloneMap(j.Env),
		Cluster: j.Cluster, NodeName: j.NodeName, Selector: j.Selector, Tolerations: slices.Clone(j.Tolerations),
		Affinity: Affinity{SpreadReplicas: j.Affinity.SpreadReplicas, WithJobs: slices.Clone(j.Affinity.WithJobs), AwayFromJobs: slices.Clone(j.Affinity.AwayFromJobs)},
		Volumes:  slices.Clone(j.Volumes)}
	if j.Priority != PriorityNormal {
		s.Priority = j.Priority.String()
	}
	if j.Replicas != 1 {
		s.Replicas = ptr(int64(j.Replicas))
	}
	if j.Kind == KindService && j.MinAvailable != 1 {
		s.MinAvailable = ptr(int64(j.MinAvailable))
	}
	if t := j.Topology; t != nil {
		s.Topology = &JobTopology{Required: t.Required, Preferred: t.Preferred}
	}
	s.Spark = j.Spark.spec()
	if d := driverSpec(j); d != nil {
		s.Spark.Driver = d
	} else {
		s.Resources = resourcesSpec(j.Resources)
	}
	main := j.ShapeAt(0)
	for _, sh := range j.Fallbacks {
		s.Fallbacks = append(s.Fallbacks, fallbackSpec(main, sh))
	}
	j.lifecycleSpec(s)
	j.storageSpec(s)
	if o := j.MPI; o != nil {
		s.MPI = &MPISpec{MpirunArgs: slices.Clone(o.MpirunArgs)}
		if o.SlotsPerReplica > 0 {
			s.MPI.SlotsPerReplica = ptr(o.SlotsPerReplica)
		}
		if o.StartTimeout > 0 {
			s.MPI.StartTimeout = o.StartTimeout.String()
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// YAML is s as a spec file holds it: block style, its fields in the order
// JobSpec declares them (kind and name first), strings quoted where YAML
// would read them as another type.
func (s *JobSpec) YAML() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil { // JSON is YAML: its order kept
		return nil, fmt.Errorf("job spec as YAML: %w", err)
	}
	blockStyle(&doc)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("job spec as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("job spec as YAML: %w", err)
	}
	return out.Bytes(), nil
}

// blockStyle drops the JSON styles (flow collections, double quotes) from
// n and what it holds; the encoder quotes what must be.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// cpuQuantity is m millicores as a spec writes it: whole cores "4", else
// millicores "500m".
func cpuQuantity(m int64) Quantity {
	if m%1000 == 0 {
		return Quantity(fmt.Sprint(m / 1000))
	}
	return Quantity(fmt.Sprintf("%dm", m))
}

// resourcesSpec is r as a spec writes it.
func resourcesSpec(r Resources) ResourcesSpec {
	var rs ResourcesSpec
	if r.MilliCPU > 0 {
		rs.CPU = cpuQuantity(r.MilliCPU)
	}
	if r.Memory > 0 {
		rs.Memory = Quantity(FormatBytes(r.Memory))
	}
	if r.Accels > 0 {
		rs.Accelerators = &AcceleratorSpec{Type: r.AccelType, Count: r.Accels}
	}
	rs.Devices = cloneMap(r.Devices)
	return rs
}

// driverSpec is spark job j's driver as spark.driver gives it, when its
// resources are whole cores and a whole number of GiB of heap with
// Spark's memory overhead; nil when they are better said as resources.
func driverSpec(j *Job) *SparkDriverSpec {
	r := j.Resources
	if j.Spark == nil || r.Accels > 0 || len(r.Devices) > 0 || r.MilliCPU%1000 != 0 || r.MilliCPU < 1000 || r.MilliCPU > MaxSparkExecutorCores*1000 {
		return nil
	}
	heap := SparkDriverHeap(r.Memory)
	if heap < MinSparkExecutorMemory || heap%(1<<30) != 0 || heap+SparkMemoryOverhead(heap) != r.Memory {
		return nil
	}
	d := &SparkDriverSpec{}
	if cores := r.MilliCPU / 1000; cores != DefaultSparkDriverCores {
		d.Cores = ptr(cores)
	}
	if heap != DefaultSparkDriverMemory {
		d.Memory = Quantity(FormatBytes(heap))
	}
	return d
}

// fallbackSpec is fallback shape sh as a spec writes it: what differs
// from main, the job's own shape, where cpu and memory are given only
// when they differ from main's scaled by the change in accelerators.
func fallbackSpec(main, sh Shape) FallbackSpec {
	var f FallbackSpec
	m, r := main.Resources, sh.Resources
	if sh.Replicas != main.Replicas {
		f.Replicas = ptr(int64(sh.Replicas))
	}
	if r.AccelType != m.AccelType || r.Accels != m.Accels {
		f.Accelerators = &AcceleratorSpec{}
		if r.AccelType != m.AccelType {
			f.Accelerators.Type = r.AccelType
			if r.AccelType == "" {
				f.Accelerators.Type = "any"
			}
		}
		if r.Accels != m.Accels {
			f.Accelerators.Count = r.Accels
		}
	}
	cpu, memory := m.MilliCPU, m.Memory
	if r.Accels != m.Accels {
		cpu, _ = scaleUp(m.MilliCPU, r.Accels, m.Accels)
		memory, _ = scaleUp(m.Memory, r.Accels, m.Accels)
	}
	if r.MilliCPU != cpu {
		f.CPU = cpuQuantity(r.MilliCPU)
	}
	if r.Memory != memory {
		f.Memory = Quantity(FormatBytes(r.Memory))
	}
	return f
}

// lifecycleSpec sets s's timeouts, restart policy and preemption fields
// that differ from the defaults.
func (j *Job) lifecycleSpec(s *JobSpec) {
	timeout := j.PendingTimeout
	if timeout == 0 {
		timeout = Duration(DefaultPendingTimeout)
	}
	if timeout != Duration(DefaultPendingTimeout) {
		s.PendingTimeout = timeout.String()
	}
	if len(j.Fallbacks) > 0 && j.DowngradeAfter != timeout/3 {
		s.DowngradeAfter = j.DowngradeAfter.String()
	}
	def := RestartNever
	if j.Kind == KindService {
		def = RestartAlways
	}
	if j.RestartPolicy != "" && j.RestartPolicy != def {
		s.RestartPolicy = j.RestartPolicy
	}
	if j.MaxPreemptions > 0 {
		s.MaxPreemptions = ptr(int64(j.MaxPreemptions))
	}
	if n := j.PreemptNotice; n != nil {
		s.PreemptNotice = &PreemptNotice{Signal: n.Signal, Seconds: n.Seconds}
	}
}

// storageSpec sets s's cache, scratch and configs.
func (j *Job) storageSpec(s *JobSpec) {
	if j.CacheMountPath != "" {
		s.Cache = &CacheSpec{Datasets: slices.Clone(j.Datasets)}
		if j.CacheMountPath != DefaultCachePath {
			s.Cache.MountPath = j.CacheMountPath
		}
	}
	if sc := j.Scratch; sc != nil {
		s.Scratch = &ScratchSpec{Size: Quantity(FormatBytes(sc.Size))}
		if sc.MountPath != DefaultScratchPath {
			s.Scratch.MountPath = sc.MountPath
		}
	}
	for _, c := range j.Configs {
		// The coordinator resolved the name to its owner: a project
		// other than the job's own is named PROJECT/NAME.
		if p, ok := strings.CutPrefix(string(c.Owner), "project:"); ok && ProjectID(p) != j.Project {
			switch {
			case c.Config != "":
				c.Config = p + "/" + c.Config
			case c.Secret != "":
				c.Secret = p + "/" + c.Secret
			}
		}
		c.Owner = ""
		s.Configs = append(s.Configs, c)
	}
}

// spec is sp as a spark section writes it, defaults left out; nil for
// nil.
func (sp *Spark) spec() *SparkSpec {
	if sp == nil {
		return nil
	}
	ss := &SparkSpec{MainApplicationFile: sp.MainApplicationFile, MainClass: sp.MainClass, Arguments: slices.Clone(sp.Arguments),
		SparkConf: cloneMap(sp.SparkConf), Namespace: sp.Namespace}
	if sp.ServiceAccount != DefaultSparkServiceAccount {
		ss.ServiceAccount = sp.ServiceAccount
	}
	e, out := sp.Executor, &ss.Executor
	if e.Cores != DefaultSparkExecutorCores {
		out.Cores = ptr(int64(e.Cores))
	}
	if e.MilliCPURequest > 0 {
		out.CoreRequest = cpuQuantity(e.MilliCPURequest)
	}
	if e.Memory != DefaultSparkExecutorMemory {
		out.Memory = Quantity(FormatBytes(e.Memory))
	}
	if e.MemoryOverhead > 0 {
		out.MemoryOverhead = Quantity(FormatBytes(e.MemoryOverhead))
	}
	out.NodeSelector = cloneMap(e.NodeSelector)
	if g := e.GPU; g != nil {
		out.GPU = &SparkGPUSpec{Type: g.Type}
		if g.Amount != 1 {
			out.GPU.Amount = ptr(g.Amount)
		}
		if g.Vendor != DefaultSparkGPUVendor {
			out.GPU.Vendor = g.Vendor
		}
		if g.DiscoveryScript != DefaultSparkGPUDiscoveryScript {
			out.GPU.DiscoveryScript = g.DiscoveryScript
		}
	}
	switch d := sp.DynamicAllocation; {
	case d != nil:
		ss.DynamicAllocation = &SparkDynamicAllocationSpec{MaxExecutors: ptr(int64(d.MaxExecutors))}
		if d.MinExecutors != 0 {
			ss.DynamicAllocation.MinExecutors = ptr(int64(d.MinExecutors))
		}
		if d.InitialExecutors != d.MinExecutors {
			ss.DynamicAllocation.InitialExecutors = ptr(int64(d.InitialExecutors))
		}
	case e.Instances != DefaultSparkExecutorInstances:
		out.Instances = ptr(int64(e.Instances))
	}
	return ss
}
