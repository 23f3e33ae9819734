package structs

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeState is a node's schedulability.
type NodeState string

const (
	NodeReady       NodeState = "ready"       // takes new tasks
	NodeNotReady    NodeState = "not-ready"   // agent or kubelet silent; no new tasks
	NodeDraining    NodeState = "draining"    // running tasks stay; no new tasks
	NodeQuarantined NodeState = "quarantined" // failed a health check; no new tasks
)

// MaxAccelsPerNode bounds accelerators on one node (a 64-bit mask tracks them).
const MaxAccelsPerNode = 64

// Node is one machine's capacity and placement attributes.
//
// On an accelerator node CPU and memory are bound to the accelerators: each
// accelerator carries MilliCPUPerAccel and MemoryPerAccel (by default the
// node's capacity divided by its accelerator count). A node carries at most
// one accelerator type.
type Node struct {
	Name    NodeID    `json:"name"`
	Cluster ClusterID `json:"cluster,omitempty"`
	Pool    PoolID    `json:"pool,omitempty"` // "" or "public" = the public pool
	State   NodeState `json:"state"`

	Capacity Resources `json:"capacity"`
	// Per-accelerator binding; zero means capacity / accelerator count.
	MilliCPUPerAccel int64 `json:"milliCPUPerAccel,omitempty"`
	MemoryPerAccel   int64 `json:"memoryPerAccel,omitempty"`
	// Quarantined lists the accelerators taken out of service, one entry
	// per accelerator, by index. Only the coordinator writes it (a failed
	// preflight adds, an admin's release removes); a node spec never does.
	Quarantined []Quarantine `json:"quarantined,omitempty"`

	Tags   map[string]string `json:"tags,omitempty"` // labels; a bare tag "A100" is key "A100" with value ""
	Taints []corev1.Taint    `json:"taints,omitempty"`
}

// Quarantine takes one accelerator of a node out of service because a
// health check (atom's preflight) failed on it. A task already on it runs
// until it ends; no new task gets it until an admin releases it.
type Quarantine struct {
	Accel  int       `json:"accelerator"`
	Reason string    `json:"reason"` // what the check found
	Since  time.Time `json:"since"`
	Task   TaskID    `json:"task,omitempty"` // the task whose check failed
}

// QuarantinedMask returns the node's quarantined accelerators as a mask.
func (n *Node) QuarantinedMask() AccelMask {
	var m AccelMask
	for _, q := range n.Quarantined {
		if q.Accel >= 0 && q.Accel < MaxAccelsPerNode {
			m |= 1 << uint(q.Accel)
		}
	}
	return m
}

// Ready reports whether the node takes new tasks: its state is ready (or
// unset).
func (n *Node) Ready() bool { return n.State == NodeReady || n.State == "" }

// PoolName returns the node's pool, mapping "" to PublicPool.
func (n *Node) PoolName() PoolID {
	if n.Pool == "" {
		return PublicPool
	}
	return n.Pool
}

// IsAccelNode reports whether the node has accelerators.
func (n *Node) IsAccelNode() bool { return n.Capacity.Accels > 0 }

// AccelShare returns the CPU (millicores) and memory (bytes) bound to one
// accelerator on this node.
func (n *Node) AccelShare() (milliCPU, memory int64) {
	if n.Capacity.Accels == 0 {
		return 0, 0
	}
	milliCPU, memory = n.MilliCPUPerAccel, n.MemoryPerAccel
	if milliCPU == 0 {
		milliCPU = n.Capacity.MilliCPU / n.Capacity.Accels
	}
	if memory == 0 {
		memory = n.Capacity.Memory / n.Capacity.Accels
	}
	return milliCPU, memory
}

// Cluster is one Kubernetes cluster or the local machine.
type Cluster struct {
	Name    ClusterID `json:"name"`
	Backend string    `json:"backend"`         // "local" or "kubernetes"
	Redis   string    `json:"redis,omitempty"` // host:port of its dataset cache
	// Kubeconfig and Namespace, for a kubernetes cluster: the kubeconfig
	// file every server reaches it with ("" = in-cluster) and the namespace
	// of its task Pods ("" = default).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Image, QPS, Burst and HeartbeatPods, for a kubernetes cluster,
	// override the server's --kube-image, --kube-qps, --kube-burst and
	// --kube-heartbeat-pods for it (zero: the server's).
	Image         string `json:"image,omitempty"`
	QPS           int    `json:"qps,omitempty"`
	Burst         int    `json:"burst,omitempty"`
	HeartbeatPods bool   `json:"heartbeatPods,omitempty"`
	// ServiceAccount, for a kubernetes cluster, is the task Pods' service
	// account ("" = default).
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Topology names the node labels of its topology levels, widest
	// first; nil: none (jobs may not ask for topology there).
	Topology *Topology `json:"topology,omitempty"`
}
