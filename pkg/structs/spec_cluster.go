package structs

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// QuotaSpec is a scope's public-pool limits as an admin writes them:
//
//	scope: user:u1            # or project:p1
//	limits: {cpu: "64", memory: 256Gi, gpu/A100: 8, gpu: 4, device/jetson-xavier: 2}
//	weight: 2                 # fair-share weight (default 1)
//
// cpu is in cores (converted to millicores), memory in bytes, the rest in
// whole units. Negative limits are refused.
type QuotaSpec struct {
	Scope  Scope               `json:"scope"`
	Limits map[string]Quantity `json:"limits,omitempty"`
	Weight *float64            `json:"weight,omitempty"`
}

// NodeSpec is one machine as a cluster config or an admin declares it:
//
//	name: n1
//	pool: perception              # omitted: the public pool
//	cpu: 56
//	memory: 944Gi
//	accelerators: {type: A100, count: 8}
//	tags: {A100: "", fabric: ib}
//	taints: [{key: maint, value: "true", effect: NoSchedule}]
//
// A node has at most one accelerator type, and has accelerators or edge
// devices, not both. cpuPerAccelerator and
// memoryPerAccelerator set the share bound to each accelerator (default:
// capacity / count); share × count may not exceed the capacity.
type NodeSpec struct {
	Name                 NodeID            `json:"name"` // DNS-1123 subdomain
	Cluster              ClusterID         `json:"cluster,omitempty"`
	Pool                 PoolID            `json:"pool,omitempty"`
	State                NodeState         `json:"state,omitempty"` // default ready
	CPU                  Quantity          `json:"cpu"`             // cores
	Memory               Quantity          `json:"memory"`          // bytes
	Accelerators         *AcceleratorSpec  `json:"accelerators,omitempty"`
	CPUPerAccelerator    Quantity          `json:"cpuPerAccelerator,omitempty"`
	MemoryPerAccelerator Quantity          `json:"memoryPerAccelerator,omitempty"`
	Devices              map[string]int64  `json:"devices,omitempty"` // edge device type -> units
	Tags                 map[string]string `json:"tags,omitempty"`    // a bare tag is a key with value ""
	Taints               []corev1.Taint    `json:"taints,omitempty"`
}

// PoolSpec is a pool: the public pool (name public, nothing else) or a
// project pool with its members.
type PoolSpec struct {
	Name     PoolID    `json:"name"`
	Project  ProjectID `json:"project,omitempty"`
	Members  []UserID  `json:"members,omitempty"`
	LendIdle bool      `json:"lendIdle,omitempty"`
	// MaxPreemptNotice is the longest preemption notice its jobs get
	// (a duration from 1s to 1h; default 5m).
	MaxPreemptNotice string `json:"maxPreemptNotice,omitempty"`
	// MinRuntime is how long its low jobs run before they may be
	// preempted while another choice exists (a duration up to 24h;
	// default 0, none). The public pool may set it too.
	MinRuntime string `json:"minRuntime,omitempty"`
}

// ClusterSpec is a cluster: backend local (default) or kubernetes, and the
// host:port of its Redis dataset cache, if any. A kubernetes cluster names
// the kubeconfig file the coordinator reaches it with (on every server;
// empty: the in-cluster service account) and the namespace of its task
// Pods (default "default"); a local one names neither. A kubernetes
// cluster may also set, for itself, what the server's flags set for all:
// the image of task Pods whose job names none (image), the client's rate
// limits (qps, burst: requests per second and the burst above it), and
// heartbeatPods (the coordinator heartbeats for Running task Pods, as on a
// kwok cluster, where no atom runs in them), and serviceAccount, the task
// Pods' service account in the namespace (default "default"), whose token
// bound to each Pod atom exchanges for its allocation token.
type ClusterSpec struct {
	Name           ClusterID `json:"name"`
	Backend        string    `json:"backend,omitempty"`
	Redis          string    `json:"redis,omitempty"`
	Kubeconfig     string    `json:"kubeconfig,omitempty"`
	Namespace      string    `json:"namespace,omitempty"`
	Image          string    `json:"image,omitempty"`
	QPS            int       `json:"qps,omitempty"`
	Burst          int       `json:"burst,omitempty"`
	HeartbeatPods  bool      `json:"heartbeatPods,omitempty"`
	ServiceAccount string    `json:"serviceAccount,omitempty"`
	Topology       *Topology `json:"topology,omitempty"`
}

// Bounds on a kubernetes cluster's client rate limits.
const (
	MaxKubeQPS   = 100000
	MaxKubeBurst = 1000000
)

// ClusterConfigSpec is a whole deployment in one YAML file, as the local
// backend and tests declare it. A node without a cluster belongs to the only
// cluster declared; a node without a pool to the public pool. Topology
// is the topology of every cluster declared without one of its own.
type ClusterConfigSpec struct {
	Topology *Topology     `json:"topology,omitempty"`
	Clusters []ClusterSpec `json:"clusters,omitempty"`
	Pools    []PoolSpec    `json:"pools,omitempty"`
	Nodes    []NodeSpec    `json:"nodes,omitempty"`
	Quotas   []QuotaSpec   `json:"quotas,omitempty"`
	// FairShare sets how usage is counted for fair share (defaults
	// when left out).
	FairShare *FairShareSpec `json:"fairShare,omitempty"`
}

// ClusterConfig is a validated ClusterConfigSpec in internal types.
type ClusterConfig struct {
	Clusters []Cluster
	Pools    []Pool
	Nodes    []Node
	Quotas   []Quota
	// FairShare is nil when the config leaves it out (the defaults).
	FairShare *FairShare
}

// ParseQuotaSpec decodes and validates one quota spec.
func ParseQuotaSpec(data []byte) (*Quota, error) {
	s := new(QuotaSpec)
	if err := decodeSpec(data, s, "quota spec"); err != nil {
		return nil, err
	}
	return s.ToQuota()
}

// ParseNodeSpec decodes and validates one node spec.
func ParseNodeSpec(data []byte) (*Node, error) {
	s := new(NodeSpec)
	if err := decodeSpec(data, s, "node spec"); err != nil {
		return nil, err
	}
	return s.ToNode()
}

// ParsePoolSpec decodes and validates one pool spec.
func ParsePoolSpec(data []byte) (*Pool, error) {
	s := new(PoolSpec)
	if err := decodeSpec(data, s, "pool spec"); err != nil {
		return nil, err
	}
	return s.ToPool()
}

// ParseClusterConfig decodes and validates a cluster config.
func ParseClusterConfig(data []byte) (*ClusterConfig, error) {
	s := new(ClusterConfigSpec)
	if err := decodeSpec(data, s, "cluster config"); err != nil {
		return nil, err
	}
	return s.ToConfig()
}

// ToQuota validates s and converts it.
func (s *QuotaSpec) ToQuota() (*Quota, error) { return s.convert("") }

func (s *QuotaSpec) convert(p string) (*Quota, error) {
	if err := checkText(reflect.ValueOf(s).Elem(), p, false); err != nil {
		return nil, err
	}
	if err := validateScope(at(p, "scope"), s.Scope); err != nil {
		return nil, err
	}
	q := &Quota{Scope: s.Scope, Limits: ResourceList{}}
	if s.Weight != nil {
		if err := ValidWeight(at(p, "weight"), *s.Weight); err != nil {
			return nil, err
		}
		q.Weight = *s.Weight
	}
	for _, k := range sortedKeys(s.Limits) {
		field := key(at(p, "limits"), k)
		if ValidResourceKey(ResourceKey(k)) != nil {
			return nil, bad(at(p, "limits"), k, "use cpu, memory, gpu, gpu/<type> or device/<type>")
		}
		var v int64
		var err error
		switch ResourceKey(k) {
		case KeyCPU:
			v, err = unitValue(field, s.Limits[k], 1000, "millicores")
		case KeyMemory:
			v, err = memoryValue(field, s.Limits[k])
		default:
			v, err = unitValue(field, s.Limits[k], 1, "units")
		}
		if err != nil {
			return nil, err
		}
		q.Limits[ResourceKey(k)] = v
	}
	return q, nil
}

// validateScope accepts "user:<name>" and "project:<DNS label>".
func validateScope(field string, s Scope) error {
	kind, name, _ := strings.Cut(string(s), ":")
	switch {
	case kind == "user" && validName(name):
		return nil
	case kind == "project" && len(validation.IsDNS1123Label(name)) == 0:
		return nil
	}
	return bad(field, string(s), "use user:<name> or project:<name>")
}

// ToNode validates s and converts it.
func (s *NodeSpec) ToNode() (*Node, error) { return s.convert("") }

func (s *NodeSpec) convert(p string) (*Node, error) {
	if err := checkText(reflect.ValueOf(s).Elem(), p, false); err != nil {
		return nil, err
	}
	if err := validateNodeName(at(p, "name"), s.Name); err != nil {
		return nil, err
	}
	if s.Cluster != "" {
		if err := ValidateObjectName(at(p, "cluster"), string(s.Cluster)); err != nil {
			return nil, err
		}
	}
	if s.Pool != "" {
		if err := ValidateObjectName(at(p, "pool"), string(s.Pool)); err != nil {
			return nil, err
		}
	}
	n := &Node{Name: s.Name, Cluster: s.Cluster, Pool: s.Pool, State: s.State}
	switch s.State {
	case "":
		n.State = NodeReady
	case NodeReady, NodeNotReady, NodeDraining, NodeQuarantined:
	default:
		return nil, bad(at(p, "state"), string(s.State), "use ready, not-ready, draining or quarantined")
	}
	c := &n.Capacity
	var err error
	if c.MilliCPU, err = positive(at(p, "cpu"), s.CPU, 1000, "millicores"); err != nil {
		return nil, err
	}
	if c.Memory, err = positive(at(p, "memory"), s.Memory, 1, "bytes"); err != nil {
		return nil, err
	}
	if _, err = memoryValue(at(p, "memory"), s.Memory); err != nil {
		return nil, err
	}
	if err := s.accelerators(p, n); err != nil {
		return nil, err
	}
	if len(s.Devices) > 0 {
		if s.Accelerators != nil {
			// The scheduler treats such a node as an accelerator node, where
			// edge jobs never go: the devices could never be used.
			return nil, &FieldError{Field: at(p, "devices"), Msg: "are not allowed with accelerators: a node has accelerators or edge devices, not both"}
		}
		c.Devices = make(map[string]int64, len(s.Devices))
		for _, t := range sortedKeys(s.Devices) {
			if err := ValidateTypeName(at(p, "devices"), t); err != nil {
				return nil, err
			}
			if s.Devices[t] < 1 {
				return nil, bad(key(at(p, "devices"), t), s.Devices[t], "use 1 or more whole devices")
			}
			c.Devices[t] = s.Devices[t]
		}
	}
	if err := checkLabels(at(p, "tags"), s.Tags); err != nil {
		return nil, err
	}
	n.Tags = cloneMap(s.Tags)
	for i, t := range s.Taints {
		f := idx(at(p, "taints"), i)
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return nil, bad(f+".key", t.Key, "use a taint key: %s", ValidationText(errs))
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return nil, bad(f+".value", t.Value, "use a taint value: %s", ValidationText(errs))
		}
		if err := checkEffect(f+".effect", t.Effect, false); err != nil {
			return nil, err
		}
	}
	n.Taints = append([]corev1.Taint(nil), s.Taints...)
	return n, nil
}

// accelerators converts the node's accelerators and their per-accelerator share.
func (s *NodeSpec) accelerators(p string, n *Node) error {
	a := s.Accelerators
	if a == nil {
		if s.CPUPerAccelerator != "" || s.MemoryPerAccelerator != "" {
			f := at(p, "cpuPerAccelerator")
			v := s.CPUPerAccelerator
			if v == "" {
				f, v = at(p, "memoryPerAccelerator"), s.MemoryPerAccelerator
			}
			return bad(f, v, "the node has no accelerators")
		}
		return nil
	}
	f := at(p, "accelerators")
	if a.Type == "" || a.Type == "any" {
		return bad(f+".type", a.Type, "name the node's accelerator type, such as A100")
	}
	t, count, err := a.convert(f)
	if err != nil {
		return err
	}
	n.Capacity.AccelType, n.Capacity.Accels = t, count
	share := func(name string, q Quantity, perUnit int64, unit string, capacity string, fits func(int64) bool) (int64, error) {
		if q == "" {
			return 0, nil
		}
		v, err := positive(at(p, name), q, perUnit, unit)
		if err == nil && unit == "bytes" {
			v, err = memoryValue(at(p, name), q) // a bare 16 is 16 bytes: refused as memory is
		}
		if err == nil && !fits(v) {
			err = bad(at(p, name), q, "%d accelerators would need more than the node's %s", count, capacity)
		}
		return v, err
	}
	c := n.Capacity
	if c.MilliCPU < count || c.Memory < count {
		return bad(f+".count", count, "the node's cpu (%s) and memory (%s) must give each accelerator a share", FormatMilliCPU(c.MilliCPU), FormatBytes(c.Memory))
	}
	n.MilliCPUPerAccel, err = share("cpuPerAccelerator", s.CPUPerAccelerator, 1000, "millicores",
		"cpu "+FormatMilliCPU(c.MilliCPU), func(v int64) bool { return v <= c.MilliCPU/count })
	if err != nil {
		return err
	}
	n.MemoryPerAccel, err = share("memoryPerAccelerator", s.MemoryPerAccelerator, 1, "bytes",
		"memory "+FormatBytes(c.Memory), func(v int64) bool { return v <= c.Memory/count })
	return err
}

// positive is unitValue that also refuses zero.
func positive(field string, q Quantity, perUnit int64, unit string) (int64, error) {
	v, err := unitValue(field, q, perUnit, unit)
	if (err == nil && v == 0) || (err != nil && strings.HasPrefix(strings.TrimSpace(string(q)), "-")) {
		// A negative one too: "use 0 or more" would send the user to 0.
		err = bad(field, q, "use more than 0")
	}
	return v, err
}

// ToPool validates s and converts it.
func (s *PoolSpec) ToPool() (*Pool, error) { return s.convert("") }

func (s *PoolSpec) convert(p string) (*Pool, error) {
	if err := checkText(reflect.ValueOf(s).Elem(), p, false); err != nil {
		return nil, err
	}
	if err := ValidateObjectName(at(p, "name"), string(s.Name)); err != nil {
		return nil, err
	}
	if s.Name == PublicPool {
		switch {
		case s.Project != "":
			return nil, bad(at(p, "project"), string(s.Project), "the public pool belongs to no project")
		case len(s.Members) > 0:
			return nil, &FieldError{Field: at(p, "members"), Msg: "are not allowed: the public pool is open to everyone under quota"}
		case s.LendIdle:
			return nil, bad(at(p, "lendIdle"), true, "the public pool already takes low jobs")
		case s.MaxPreemptNotice != "":
			return nil, bad(at(p, "maxPreemptNotice"), s.MaxPreemptNotice, "the public pool's is fixed (%s): set it on project pools", DefaultMaxPreemptNotice)
		}
		run, err := s.minRuntime(p)
		if err != nil {
			return nil, err
		}
		return &Pool{Name: PublicPool, MinRuntime: run}, nil
	}
	if err := ValidateObjectName(at(p, "project"), string(s.Project)); err != nil {
		return nil, err
	}
	seen := map[UserID]bool{}
	for i, m := range s.Members {
		f := idx(at(p, "members"), i)
		if err := ValidateTypeName(f, string(m)); err != nil {
			return nil, err
		}
		if seen[m] {
			return nil, bad(f, string(m), "members must be unique")
		}
		seen[m] = true
	}
	var notice Duration
	if s.MaxPreemptNotice != "" {
		d, err := time.ParseDuration(s.MaxPreemptNotice)
		if err != nil || d < time.Second || d > MaxPreemptNoticeSeconds*time.Second {
			return nil, bad(at(p, "maxPreemptNotice"), s.MaxPreemptNotice, "use a duration from 1s to 1h, such as 90s or 10m (leave it out for %s)", DefaultMaxPreemptNotice)
		}
		notice = Duration(d)
	}
	run, err := s.minRuntime(p)
	if err != nil {
		return nil, err
	}
	return &Pool{Name: s.Name, Project: s.Project, Members: append([]UserID(nil), s.Members...), LendIdle: s.LendIdle,
		MaxPreemptNotice: notice, MinRuntime: run}, nil
}

// minRuntime checks s's minRuntime.
func (s *PoolSpec) minRuntime(p string) (Duration, error) {
	if s.MinRuntime == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s.MinRuntime)
	if err != nil || d < 0 || d > MaxMinRuntime {
		return 0, bad(at(p, "minRuntime"), s.MinRuntime, "use a duration from 0s to 24h, such as 10m (leave it out for none)")
	}
	return Duration(d), nil
}

func (s *ClusterSpec) convert(p string) (*Cluster, error) {
	if err := ValidateObjectName(at(p, "name"), string(s.Name)); err != nil {
		return nil, err
	}
	c := &Cluster{Name: s.Name, Backend: s.Backend, Redis: s.Redis, Kubeconfig: s.Kubeconfig, Namespace: s.Namespace,
		Image: s.Image, QPS: s.QPS, Burst: s.Burst, HeartbeatPods: s.HeartbeatPods, ServiceAccount: s.ServiceAccount,
		Topology: s.Topology.clone()}
	if err := s.Topology.check(at(p, "topology")); err != nil {
		return nil, err
	}
	switch s.Backend {
	case "":
		c.Backend = "local"
	case "local", "kubernetes":
	default:
		return nil, bad(at(p, "backend"), s.Backend, "use local or kubernetes")
	}
	if c.Backend == "local" && s.Kubeconfig != "" {
		return nil, bad(at(p, "kubeconfig"), s.Kubeconfig, "only a kubernetes cluster has one: give backend: kubernetes, or no kubeconfig")
	}
	if c.Backend == "local" && s.Namespace != "" {
		return nil, bad(at(p, "namespace"), s.Namespace, "only a kubernetes cluster has one: give backend: kubernetes, or no namespace")
	}
	if c.Backend == "local" {
		switch {
		case s.Image != "":
			return nil, bad(at(p, "image"), s.Image, "only a kubernetes cluster has one: give backend: kubernetes, or no image")
		case s.QPS != 0:
			return nil, bad(at(p, "qps"), s.QPS, "only a kubernetes cluster has one: give backend: kubernetes, or no qps")
		case s.Burst != 0:
			return nil, bad(at(p, "burst"), s.Burst, "only a kubernetes cluster has one: give backend: kubernetes, or no burst")
		case s.HeartbeatPods:
			return nil, bad(at(p, "heartbeatPods"), true, "only a kubernetes cluster has Pods: give backend: kubernetes, or no heartbeatPods")
		case s.ServiceAccount != "":
			return nil, bad(at(p, "serviceAccount"), s.ServiceAccount, "only a kubernetes cluster has one: give backend: kubernetes, or no serviceAccount")
		}
	}
	if s.QPS < 0 || s.QPS > MaxKubeQPS {
		return nil, bad(at(p, "qps"), s.QPS, "use requests per second from 1 to %d (leave it out for the server's --kube-qps)", MaxKubeQPS)
	}
	if s.Burst < 0 || s.Burst > MaxKubeBurst {
		return nil, bad(at(p, "burst"), s.Burst, "use a number of requests from 1 to %d (leave it out for the server's --kube-burst)", MaxKubeBurst)
	}
	if s.Image != "" && strings.ContainsAny(s.Image, " \t\n") {
		return nil, bad(at(p, "image"), s.Image, "use an image reference without spaces, such as registry.example.com/atom/cpu:1.0")
	}
	if s.Namespace != "" && len(validation.IsDNS1123Label(s.Namespace)) > 0 {
		return nil, bad(at(p, "namespace"), s.Namespace, "use a Kubernetes namespace name (lowercase letters, digits and '-', at most 63)")
	}
	if s.ServiceAccount != "" && len(validation.IsDNS1123Subdomain(s.ServiceAccount)) > 0 {
		return nil, bad(at(p, "serviceAccount"), s.ServiceAccount, "use a Kubernetes service account name (lowercase letters, digits, '-' and '.', at most 253)")
	}
	if s.Redis != "" {
		host, port, err := net.SplitHostPort(s.Redis)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, bad(at(p, "redis"), s.Redis, "use host:port, such as 127.0.0.1:6379")
		}
	}
	return c, nil
}

// oneSpelling refuses type t at field when a node of seen has it in
// another case (a100 where A100 is seen), and else records it for node.
func oneSpelling(seen map[string]NodeID, t string, node NodeID, field string) error {
	if twin := CaseTwin(sortedKeys(seen), t); twin != "" {
		return bad(field, t, "node %s has %s: types are case-sensitive, so write %s", seen[twin], twin, twin)
	}
	if _, ok := seen[t]; !ok {
		seen[t] = node
	}
	return nil
}

// ToConfig validates s, including references between its parts, and converts it.
func (s *ClusterConfigSpec) ToConfig() (*ClusterConfig, error) {
	if err := checkText(reflect.ValueOf(s).Elem(), "", false); err != nil {
		return nil, err
	}
	cfg := &ClusterConfig{}
	if err := s.Topology.check("topology"); err != nil {
		return nil, err
	}
	clusters := map[ClusterID]bool{}
	for i := range s.Clusters {
		c, err := s.Clusters[i].convert(idx("clusters", i))
		if err != nil {
			return nil, err
		}
		if c.Topology == nil {
			c.Topology = s.Topology.clone()
		}
		if clusters[c.Name] {
			return nil, bad(idx("clusters", i)+".name", string(c.Name), "cluster names must be unique")
		}
		clusters[c.Name] = true
		cfg.Clusters = append(cfg.Clusters, *c)
	}
	pools, projects := map[PoolID]bool{}, map[ProjectID]bool{}
	for i := range s.Pools {
		f := idx("pools", i)
		pl, err := s.Pools[i].convert(f)
		if err != nil {
			return nil, err
		}
		if pools[pl.Name] {
			return nil, bad(f+".name", string(pl.Name), "pool names must be unique")
		}
		if pl.Project != "" && projects[pl.Project] {
			return nil, bad(f+".project", string(pl.Project), "a project has one pool")
		}
		pools[pl.Name], projects[pl.Project] = true, true
		cfg.Pools = append(cfg.Pools, *pl)
	}
	nodes := map[NodeID]bool{}
	// Accelerator and device types: the first node with each.
	accels, devices := map[string]NodeID{}, map[string]NodeID{}
	for i := range s.Nodes {
		f := idx("nodes", i)
		n, err := s.Nodes[i].convert(f)
		if err != nil {
			return nil, err
		}
		if nodes[n.Name] {
			return nil, bad(f+".name", string(n.Name), "node names must be unique")
		}
		nodes[n.Name] = true
		if t := n.Capacity.AccelType; t != "" {
			if err := oneSpelling(accels, t, n.Name, f+".accelerators.type"); err != nil {
				return nil, err
			}
		}
		for _, t := range sortedKeys(n.Capacity.Devices) {
			if err := oneSpelling(devices, t, n.Name, f+".devices"); err != nil {
				return nil, err
			}
		}
		switch {
		case n.Cluster == "" && len(cfg.Clusters) == 1:
			n.Cluster = cfg.Clusters[0].Name
		case n.Cluster == "" && len(cfg.Clusters) == 0:
			return nil, bad(f+".cluster", "", "declare the node's cluster under clusters")
		case n.Cluster == "":
			return nil, bad(f+".cluster", "", "name one of the %d clusters declared", len(cfg.Clusters))
		case !clusters[n.Cluster]:
			return nil, bad(f+".cluster", string(n.Cluster), "declare the cluster under clusters")
		}
		if n.Pool != "" && n.Pool != PublicPool && !pools[n.Pool] {
			return nil, bad(f+".pool", string(n.Pool), "declare the pool under pools, or leave it out for the public pool")
		}
		cfg.Nodes = append(cfg.Nodes, *n)
	}
	scopes := map[Scope]bool{}
	for i := range s.Quotas {
		q, err := s.Quotas[i].convert(idx("quotas", i))
		if err != nil {
			return nil, err
		}
		if scopes[q.Scope] {
			return nil, bad(idx("quotas", i)+".scope", string(q.Scope), "give each scope one quota")
		}
		scopes[q.Scope] = true
		cfg.Quotas = append(cfg.Quotas, *q)
	}
	if s.FairShare != nil {
		f, err := s.FairShare.convert("fairShare")
		if err != nil {
			return nil, err
		}
		cfg.FairShare = f
	}
	return cfg, nil
}
