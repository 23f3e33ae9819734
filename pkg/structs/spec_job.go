package structs

import (
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Bounds on a job spec.
const (
	MaxReplicas       = 10000
	MaxMaxPreemptions = 1000
	MaxFallbacks      = 16 // rungs on a job's pending ladder
	DefaultCachePath  = "/mnt/cache"
)

// JobSpec is a job as a user writes it, in YAML or JSON:
//
//	kind: mpi
//	name: train-bev
//	project: perception
//	replicas: 2
//	resources: {cpu: "48", memory: 512Gi, accelerators: {type: A100, count: 8}}
//	fallbacks: [{replicas: 4, accelerators: {count: 4}}]
//	downgradeAfter: 10m
//
// The fallback runs 4 replicas of 4 A100s with 24 cores and 256Gi each: a
// fallback that changes the accelerators per replica scales the job's
// per-replica cpu and memory with them, unless it gives its own cpu or
// memory (see FallbackSpec).
//
// A spec is one YAML 1.2 or JSON document (see spec_decode.go): string
// fields take values as written (name: on is "on", not "true"), and numbers
// are decimal (replicas: 010 is 10; 0x10 is refused). Quantities use
// Kubernetes syntax (cpu "500m" or 4; memory "944Gi"); durations use Go
// syntax ("30m"). Decode it with ParseJobSpec, which refuses unknown fields;
// convert it with ToJob.
type JobSpec struct {
	// Kind is mpi, spark, service, command or a plugin's kind (a DNS label).
	Kind     JobKind           `json:"kind"`
	Name     string            `json:"name"`               // DNS-1123 label
	Project  ProjectID         `json:"project,omitempty"`  // DNS-1123 label; required for high
	Priority string            `json:"priority,omitempty"` // high, normal (default) or low
	Labels   map[string]string `json:"labels,omitempty"`   // Kubernetes label keys and values

	Image   string            `json:"image,omitempty"`
	Command []string          `json:"command,omitempty" spec:"multiline"`
	Args    []string          `json:"args,omitempty" spec:"multiline"`
	Env     map[string]string `json:"env,omitempty" spec:"multiline"`

	Replicas     *int64        `json:"replicas,omitempty"`     // 1..MaxReplicas; default 1
	MinAvailable *int64        `json:"minAvailable,omitempty"` // services: 1..replicas; default 1
	Resources    ResourcesSpec `json:"resources,omitzero"`     // per replica

	Cluster     ClusterID           `json:"cluster,omitempty"`
	NodeName    NodeID              `json:"nodeName,omitempty"`
	Selector    string              `json:"selector,omitempty"` // label selector over node tags
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	Affinity    Affinity            `json:"affinity,omitzero"`
	Topology    *JobTopology        `json:"topology,omitempty"` // one domain of a topology level (topology.go)

	// Fallbacks is the pending ladder, tried in order after DowngradeAfter.
	Fallbacks      []FallbackSpec `json:"fallbacks,omitempty"`
	DowngradeAfter string         `json:"downgradeAfter,omitempty"` // default pendingTimeout/3 when fallbacks are given
	PendingTimeout string         `json:"pendingTimeout,omitempty"` // default 30m
	RestartPolicy  RestartPolicy  `json:"restartPolicy,omitempty"`  // default Always for services, else Never
	MaxPreemptions *int64         `json:"maxPreemptions,omitempty"` // 1..MaxMaxPreemptions; default DefaultMaxPreemptions
	PreemptNotice  *PreemptNotice `json:"preemptNotice,omitempty"`  // warn the job before SIGTERM when preempted

	Volumes []Volume     `json:"volumes,omitempty"`
	Cache   *CacheSpec   `json:"cache,omitempty"`
	Scratch *ScratchSpec `json:"scratch,omitempty"`
	Configs []ConfigRef  `json:"configs,omitempty"`

	MPI *MPISpec `json:"mpi,omitempty"` // kind mpi only

	Spark *SparkSpec `json:"spark,omitempty"` // kind spark only, and required there
}

// ResourcesSpec is what one replica asks for. Accelerators and devices
// exclude each other; cpu and memory may come with either.
type ResourcesSpec struct {
	CPU          Quantity         `json:"cpu,omitempty"`    // cores: "500m", 4
	Memory       Quantity         `json:"memory,omitempty"` // bytes: "16Gi"
	Accelerators *AcceleratorSpec `json:"accelerators,omitempty"`
	Devices      map[string]int64 `json:"devices,omitempty"` // edge device type -> whole units
}

// AcceleratorSpec asks for Count whole accelerators of Type on one node.
// An empty Type, or "any", takes any type.
type AcceleratorSpec struct {
	Type  string `json:"type,omitempty"`
	Count int64  `json:"count,omitempty"`
}

// FallbackSpec is one rung of the pending ladder: the job's shape with
// replicas, accelerators, cpu and/or memory changed. Omitted fields (and an
// omitted accelerator type or count) keep the job's own, except that when a
// fallback changes the accelerators per replica, the job's per-replica cpu
// and memory are scaled by new count / old count (rounded up to whole
// millicores and bytes): cpu: 48 on 8 accelerators becomes 12 on 2. Give
// cpu or memory in the fallback to set them instead.
//
// A job has at most MaxFallbacks fallbacks. A fallback never asks for more
// in total than the job (replicas × accelerators, or replicas for jobs
// without accelerators; for jobs without accelerators, also replicas × the
// cpu and memory the fallback gives) and must differ from the job and from
// earlier fallbacks. Per kind:
//   - mpi keeps replicas × accelerators (its world size): it may change the
//     accelerator type or trade accelerators per replica for replicas;
//   - service keeps at least its replicas (minAvailable is how a service
//     starts smaller);
//   - spark, command and plugin kinds may also drop replicas.
type FallbackSpec struct {
	Replicas     *int64           `json:"replicas,omitempty"`
	Accelerators *AcceleratorSpec `json:"accelerators,omitempty"`
	CPU          Quantity         `json:"cpu,omitempty"`    // per replica; default: the job's, scaled
	Memory       Quantity         `json:"memory,omitempty"` // per replica; default: the job's, scaled
}

// CacheSpec mounts the cluster's Redis-FUSE dataset cache.
type CacheSpec struct {
	Datasets  []string `json:"datasets,omitempty"`  // e.g. "lidar/2024-05"
	MountPath string   `json:"mountPath,omitempty"` // default DefaultCachePath
}

// ParseJobSpec decodes one YAML or JSON job spec strictly (unknown or
// duplicate fields are errors) and validates it. Errors name the field.
func ParseJobSpec(data []byte) (*JobSpec, error) {
	s := new(JobSpec)
	if err := decodeSpec(data, s, "job spec"); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks s without converting it.
func (s *JobSpec) Validate() error {
	_, err := s.convert()
	return err
}

// ToJob validates s and returns the job owner submits. Defaults are filled
// in; ID and status fields are left zero for the coordinator.
func (s *JobSpec) ToJob(owner UserID) (*Job, error) {
	if err := ValidateTypeName("owner", string(owner)); err != nil {
		return nil, err
	}
	j, err := s.convert()
	if err != nil {
		return nil, err
	}
	j.Owner = owner
	return j, nil
}

// convert is ToJob without the owner: every check lives here.
func (s *JobSpec) convert() (*Job, error) {
	// Bounded first, so that nothing below walks a long list.
	if len(s.Fallbacks) > MaxFallbacks {
		return nil, &FieldError{Field: "fallbacks", Msg: fmt.Sprintf("has %d entries: at most %d are allowed", len(s.Fallbacks), MaxFallbacks)}
	}
	if err := checkText(reflect.ValueOf(s).Elem(), "", false); err != nil {
		return nil, err
	}
	j := &Job{Kind: s.Kind, Name: s.Name, Project: s.Project, Cluster: s.Cluster, NodeName: s.NodeName,
		Selector: s.Selector, Image: s.Image}
	steps := []func(*Job) error{s.identity, s.program, s.shape, s.placement, s.topology, s.ladder, s.lifecycle, s.storage, s.mounts, s.mpi, s.spark}
	for _, step := range steps {
		if err := step(j); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// identity checks kind, name, project, priority and labels.
func (s *JobSpec) identity(j *Job) error {
	const kinds = "mpi, spark, service, command or a plugin's kind"
	if s.Kind == "" {
		return &FieldError{Field: "kind", Msg: "is required: use " + kinds}
	}
	if len(validation.IsDNS1035Label(string(s.Kind))) > 0 {
		return bad("kind", string(s.Kind), "use "+kinds+" (a DNS-1035 label: lowercase, starting with a letter)")
	}
	if err := ValidateObjectName("name", s.Name); err != nil {
		return err
	}
	if s.Project != "" {
		if err := ValidateObjectName("project", string(s.Project)); err != nil {
			return err
		}
	}
	p, err := ParsePriority(s.Priority)
	if err != nil {
		return err
	}
	if p == PriorityHigh && s.Project == "" {
		return bad("priority", s.Priority, "high jobs run only in their project's pool: name a project")
	}
	j.Priority = p
	if err := checkLabels("labels", s.Labels); err != nil {
		return err
	}
	j.Labels = cloneMap(s.Labels)
	return nil
}

var imageRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)

// program checks the image and environment and copies command and args.
func (s *JobSpec) program(j *Job) error {
	if s.Image != "" && (len(s.Image) > 1024 || !imageRef.MatchString(s.Image)) {
		return bad("image", s.Image, "use an image reference such as registry.local/team/app:1.2 (at most 1024 characters)")
	}
	for _, k := range sortedKeys(s.Env) {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			return bad("env", k, "use an environment variable name: %s", ValidationText(errs))
		}
		if strings.HasPrefix(k, "ATOM_") {
			return bad("env", k, "ATOM_* variables are set by atom")
		}
	}
	j.Command = append([]string(nil), s.Command...)
	j.Args = append([]string(nil), s.Args...)
	j.Env = cloneMap(s.Env)
	return nil
}

// shape converts replicas, minAvailable and resources.
func (s *JobSpec) shape(j *Job) error {
	n := int64(1)
	if s.Replicas != nil {
		n = *s.Replicas
		if n == 0 && s.Kind == KindService {
			// Parking is a scale, so the job and its ID exist to scale up.
			return bad("replicas", n, "submit a service with 1 to %d, then park it with coordinator service scale ID 0 (POST /v1/jobs/ID/scale {\"replicas\": 0})", MaxReplicas)
		}
		if err := checkRange("replicas", n, 1, MaxReplicas, ""); err != nil {
			return err
		}
	}
	j.Replicas = int(n)
	if s.MinAvailable != nil {
		m := *s.MinAvailable
		if err := checkRange("minAvailable", m, 1, n, " (replicas)"); err != nil {
			return err
		}
		if m != n && s.Kind != KindService {
			return bad("minAvailable", m, "only services may start with fewer than replicas (%d)", n)
		}
	}
	if s.Kind == KindService {
		// A service starts once one replica fits and can be scaled down to
		// one; users raise minAvailable to ask for more at once.
		j.MinAvailable = 1
		if s.MinAvailable != nil {
			j.MinAvailable = int(*s.MinAvailable)
		}
	}
	r, driver, err := s.driverResources(n) // a spark job's spark.driver, instead of resources
	if !driver {
		r, err = s.Resources.convert("resources", n)
	}
	if err != nil {
		return err
	}
	j.Resources = r
	return nil
}

// convert turns a replica's resources into fixed units and checks that n
// replicas of them fit in int64.
func (rs *ResourcesSpec) convert(field string, n int64) (Resources, error) {
	var r Resources
	var err error
	if rs.CPU != "" {
		if r.MilliCPU, err = unitValue(field+".cpu", rs.CPU, 1000, "millicores"); err != nil {
			return r, err
		}
		if err := noOverflow(field+".cpu", rs.CPU, r.MilliCPU, n); err != nil {
			return r, err
		}
	}
	if rs.Memory != "" {
		if r.Memory, err = memoryValue(field+".memory", rs.Memory); err != nil {
			return r, err
		}
		if err := noOverflow(field+".memory", rs.Memory, r.Memory, n); err != nil {
			return r, err
		}
	}
	if a := rs.Accelerators; a != nil {
		if r.AccelType, r.Accels, err = a.convert(field + ".accelerators"); err != nil {
			return r, err
		}
	}
	if len(rs.Devices) > 0 {
		if rs.Accelerators != nil {
			return r, &FieldError{Field: field + ".devices", Msg: "is not allowed with accelerators: ask for one or the other per replica"}
		}
		r.Devices = make(map[string]int64, len(rs.Devices))
		for _, t := range sortedKeys(rs.Devices) {
			c := rs.Devices[t]
			if err := ValidateTypeName(field+".devices", t); err != nil {
				return r, err
			}
			if c < 1 {
				return r, bad(key(field+".devices", t), c, "use 1 or more whole devices")
			}
			if err := noOverflow(key(field+".devices", t), c, c, n); err != nil {
				return r, err
			}
			r.Devices[t] = c
		}
	}
	if r.IsZero() {
		return r, &FieldError{Field: field, Msg: "ask for nothing: a replica must ask for cpu, memory, accelerators or devices"}
	}
	return r, nil
}

// convert returns the accelerator type ("" = any) and count.
func (a *AcceleratorSpec) convert(field string) (string, int64, error) {
	t := a.Type
	if t == "any" {
		t = ""
	}
	if t != "" {
		if err := ValidateTypeName(field+".type", t); err != nil {
			return "", 0, err
		}
	}
	if err := checkRange(field+".count", a.Count, 1, MaxAccelsPerNode, " (accelerators on one node)"); err != nil {
		return "", 0, err
	}
	return t, a.Count, nil
}

// placement checks cluster, node, selector, tolerations and affinity.
func (s *JobSpec) placement(j *Job) error {
	if s.Cluster != "" {
		if err := ValidateObjectName("cluster", string(s.Cluster)); err != nil {
			return err
		}
	}
	if s.NodeName != "" {
		if err := validateNodeName("nodeName", s.NodeName); err != nil {
			return err
		}
	}
	if err := checkSelector("selector", s.Selector, true); err != nil {
		return err
	}
	for i, t := range s.Tolerations {
		if err := checkToleration(idx("tolerations", i), t); err != nil {
			return err
		}
	}
	j.Tolerations = append([]corev1.Toleration(nil), s.Tolerations...)
	a := s.Affinity
	with := map[string]bool{}
	for i, sel := range a.WithJobs {
		if err := checkSelector(idx("affinity.withJobs", i), sel, false); err != nil {
			return err
		}
		with[sel] = true
	}
	for i, sel := range a.AwayFromJobs {
		if err := checkSelector(idx("affinity.awayFromJobs", i), sel, false); err != nil {
			return err
		}
		if with[sel] {
			return bad(idx("affinity.awayFromJobs", i), sel, "the same selector is in withJobs: a replica cannot be both with and away from a job")
		}
	}
	if a.SpreadReplicas && s.NodeName != "" && j.Replicas > 1 {
		return bad("affinity.spreadReplicas", true, "with nodeName all %d replicas share one node: drop one of the two", j.Replicas)
	}
	j.Affinity = Affinity{SpreadReplicas: a.SpreadReplicas,
		WithJobs: append([]string(nil), a.WithJobs...), AwayFromJobs: append([]string(nil), a.AwayFromJobs...)}
	return nil
}

// ladder converts the fallback shapes; see FallbackSpec for the rules. It
// is linear in the number of fallbacks, which convert bounds by MaxFallbacks.
func (s *JobSpec) ladder(j *Job) error {
	main := j.ShapeAt(0)
	total := func(sh Shape) int64 {
		if sh.Resources.Accels > 0 {
			return int64(sh.Replicas) * sh.Resources.Accels
		}
		return int64(sh.Replicas)
	}
	seen := map[shapeKey]int{keyOf(main): 0} // shape -> index in [job, fallbacks...]
	for i, f := range s.Fallbacks {
		field := idx("fallbacks", i)
		sh := Shape{Replicas: main.Replicas, Resources: main.Resources}
		sh.Resources.Devices = cloneMap(main.Resources.Devices)
		if f.Replicas != nil {
			if err := checkRange(field+".replicas", *f.Replicas, 1, MaxReplicas, ""); err != nil {
				return err
			}
			sh.Replicas = int(*f.Replicas)
		}
		if a := f.Accelerators; a != nil {
			if main.Resources.Accels == 0 {
				return &FieldError{Field: field + ".accelerators", Msg: "is not allowed: the job asks for no accelerators"}
			}
			b := AcceleratorSpec{Type: a.Type, Count: a.Count}
			if b.Type == "" {
				b.Type = main.Resources.AccelType
			}
			if b.Count == 0 {
				b.Count = main.Resources.Accels
			}
			var err error
			if sh.Resources.AccelType, sh.Resources.Accels, err = b.convert(field + ".accelerators"); err != nil {
				return err
			}
		}
		n := int64(sh.Replicas)
		if err := fallbackCPUMemory(field, f, main, &sh); err != nil {
			return err
		}
		if sh.Resources.IsZero() {
			return &FieldError{Field: field, Msg: "asks for nothing: a replica must ask for cpu, memory, accelerators or devices"}
		}
		if k, ok := seen[keyOf(sh)]; ok {
			what := "the job's own shape"
			if k > 0 {
				what = idx("fallbacks", k-1)
			}
			return &FieldError{Field: field, Msg: "is identical to " + what + ": a fallback must change replicas, accelerators, cpu or memory"}
		}
		if total(sh) > total(main) {
			unit := "replicas"
			if main.Resources.Accels > 0 {
				unit = "accelerators"
			}
			return bad(field+".replicas", n, "it makes %d %s in total, more than the job's %d: a fallback asks for no more", total(sh), unit, total(main))
		}
		switch {
		case s.Kind == KindMPI && total(sh) != total(main):
			return bad(field+".replicas", n, "mpi fallbacks keep replicas × accelerators (the world size, %d)", total(main))
		case s.Kind == KindService && sh.Replicas < main.Replicas:
			return bad(field+".replicas", n, "services keep at least their %d replicas: minAvailable lets them start with fewer", main.Replicas)
		}
		if main.Resources.Accels == 0 {
			// Jobs without accelerators are charged cpu and memory.
			m := int64(main.Replicas)
			if f.CPU != "" && n*sh.Resources.MilliCPU > m*main.Resources.MilliCPU {
				return bad(field+".cpu", f.CPU, "%d replicas make %s cores in total, more than the job's %s: a fallback asks for no more",
					n, FormatMilliCPU(n*sh.Resources.MilliCPU), FormatMilliCPU(m*main.Resources.MilliCPU))
			}
			if f.Memory != "" && n*sh.Resources.Memory > m*main.Resources.Memory {
				return bad(field+".memory", f.Memory, "%d replicas make %s in total, more than the job's %s: a fallback asks for no more",
					n, FormatBytes(n*sh.Resources.Memory), FormatBytes(m*main.Resources.Memory))
			}
		}
		seen[keyOf(sh)] = i + 1
		j.Fallbacks = append(j.Fallbacks, sh)
	}
	return nil
}

// fallbackCPUMemory sets a fallback's per-replica cpu and memory: as the
// fallback gives them, else the job's scaled by the change in accelerators
// per replica (rounded up), and checks that its replicas' total fits in int64.
func fallbackCPUMemory(field string, f FallbackSpec, main Shape, sh *Shape) error {
	n := int64(sh.Replicas)
	r := &sh.Resources
	for _, q := range []struct {
		name  string
		given Quantity
		parse func(string, Quantity) (int64, error)
		job   int64
		out   *int64
	}{
		{"cpu", f.CPU, milliCPUValue, main.Resources.MilliCPU, &r.MilliCPU},
		{"memory", f.Memory, memoryValue, main.Resources.Memory, &r.Memory},
	} {
		if q.given != "" {
			v, err := q.parse(field+"."+q.name, q.given)
			if err != nil {
				return err
			}
			if err := noOverflow(field+"."+q.name, q.given, v, n); err != nil {
				return err
			}
			*q.out = v
			continue
		}
		v := q.job
		if r.Accels != main.Resources.Accels {
			var ok bool
			if v, ok = scaleUp(q.job, r.Accels, main.Resources.Accels); !ok {
				return bad(field+".accelerators.count", r.Accels, "it scales the job's %s per replica beyond 64 bits: give %s explicitly", q.name, field+"."+q.name)
			}
		}
		if err := noOverflow(field+".replicas", n, v, n); err != nil {
			return err
		}
		*q.out = v
	}
	return nil
}

// scaleUp returns ceil(v × num / den) and whether it fits in an int64.
func scaleUp(v, num, den int64) (int64, bool) {
	x := new(big.Int).Mul(big.NewInt(v), big.NewInt(num))
	x.Add(x, big.NewInt(den-1))
	x.Quo(x, big.NewInt(den))
	return x.Int64(), x.IsInt64()
}

// shapeKey is what tells fallback shapes apart.
type shapeKey struct {
	replicas         int
	accelType        string
	accels, cpu, mem int64
}

func keyOf(sh Shape) shapeKey {
	r := sh.Resources
	return shapeKey{sh.Replicas, r.AccelType, r.Accels, r.MilliCPU, r.Memory}
}

// lifecycle sets timeouts, the restart policy and the preemption limit.
func (s *JobSpec) lifecycle(j *Job) error {
	j.PendingTimeout = Duration(DefaultPendingTimeout)
	if s.PendingTimeout != "" {
		d, err := parseDuration("pendingTimeout", s.PendingTimeout)
		if err != nil {
			return err
		}
		j.PendingTimeout = Duration(d)
	}
	switch {
	case s.DowngradeAfter != "":
		if len(s.Fallbacks) == 0 {
			return bad("downgradeAfter", s.DowngradeAfter, "list fallbacks to downgrade to, or leave it out")
		}
		d, err := parseDuration("downgradeAfter", s.DowngradeAfter)
		if err != nil {
			return err
		}
		if d >= j.PendingTimeout.D() {
			return bad("downgradeAfter", s.DowngradeAfter, "use less than pendingTimeout (%s), or the job times out first", j.PendingTimeout)
		}
		j.DowngradeAfter = Duration(d)
	case len(s.Fallbacks) > 0:
		j.DowngradeAfter = j.PendingTimeout / 3
	}
	p := s.RestartPolicy
	switch {
	case p == "" && s.Kind == KindService:
		p = RestartAlways
	case p == "":
		p = RestartNever
	case p != RestartNever && p != RestartOnFailure && p != RestartAlways:
		hint := "use Never, OnFailure or Always"
		if m := Nearest([]string{string(RestartNever), string(RestartOnFailure), string(RestartAlways)}, string(p)); m != "" {
			hint = "did you mean " + m + "? (values are case-sensitive): " + hint
		}
		return bad("restartPolicy", string(p), "%s", hint)
	case p == RestartNever && s.Kind == KindService:
		return bad("restartPolicy", string(p), "services restart failed replicas: use Always or OnFailure")
	case p == RestartAlways && (s.Kind == KindMPI || s.Kind == KindSpark || s.Kind == KindCommand):
		return bad("restartPolicy", string(p), "%s jobs end: use Never or OnFailure", s.Kind)
	}
	j.RestartPolicy = p
	if s.MaxPreemptions != nil {
		if err := checkRange("maxPreemptions", *s.MaxPreemptions, 1, MaxMaxPreemptions, " (leave it out for the default)"); err != nil {
			return err
		}
		j.MaxPreemptions = int(*s.MaxPreemptions)
	}
	n, err := s.PreemptNotice.convert()
	j.PreemptNotice = n
	return err
}

var datasetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$`)

// DatasetRule says what a dataset name may be.
const DatasetRule = "use 1-253 letters, digits, '.', '_', ':', '/' or '-', starting with a letter or digit, without '..', '//' or a trailing '/'"

// ValidDataset tells whether d may name a dataset in the cache: in a
// job's cache.datasets and in atom cache (see DatasetRule).
func ValidDataset(d string) bool {
	return datasetName.MatchString(d) && !strings.Contains(d, "..") && !strings.Contains(d, "//") && !strings.HasSuffix(d, "/")
}

// storage checks volumes and the dataset cache.
func (s *JobSpec) storage(j *Job) error {
	names, paths := map[string]bool{}, map[string]string{}
	for i, v := range s.Volumes {
		field := idx("volumes", i)
		if err := ValidateObjectName(field+".name", v.Name); err != nil {
			return err
		}
		if names[v.Name] {
			return bad(field+".name", v.Name, "volume names must be unique")
		}
		names[v.Name] = true
		if errs := validation.IsDNS1123Subdomain(v.Claim); len(errs) > 0 {
			return bad(field+".claim", v.Claim, "use a PersistentVolumeClaim name: %s", ValidationText(errs))
		}
		if err := checkMountPath(field+".mountPath", v.MountPath, paths); err != nil {
			return err
		}
	}
	j.Volumes = append([]Volume(nil), s.Volumes...)
	c := s.Cache
	if c == nil {
		return nil
	}
	mp := c.MountPath
	if mp == "" {
		mp = DefaultCachePath
	}
	if err := checkMountPath("cache.mountPath", mp, paths); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, d := range c.Datasets {
		field := idx("cache.datasets", i)
		if !ValidDataset(d) {
			return bad(field, d, DatasetRule)
		}
		if seen[d] {
			return bad(field, d, "datasets must be unique")
		}
		seen[d] = true
	}
	j.CacheMountPath = mp
	j.Datasets = append([]string(nil), c.Datasets...)
	return nil
}
