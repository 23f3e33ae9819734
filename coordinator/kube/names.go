package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Labels and annotations that link an object to atom (a task's Pod's:
// Backend.meta). The labels carry label-safe forms of the IDs (see
// LabelValue), for selecting; the annotations of the same names carry the
// IDs exactly, and are what the backend reads back.
const (
	LabelManaged = "atom.io/managed-by" // = "atom" on everything the backend creates
	LabelJob     = "atom.io/job"
	LabelTask    = "atom.io/task"  // an annotation of task Pods
	LabelOwner   = "atom.io/owner" // of volumes
	LabelCluster = "atom.io/cluster"

	// AnnotationAlloc on a task's Pod tells the allocation it is for (a
	// hash of the allocation token: a service replica placed again keeps
	// its task ID and so its Pod name, not its token).
	AnnotationAlloc = "atom.io/allocation"
	// AnnotationSimulatedGPUs "true" on a Node: its GPUs are fake (no
	// devices, nvidia.com/gpu patched into its status, as on test nodes),
	// and atom in its Pods checks them in simulated mode;
	// AnnotationSimulatedGPUFaults lists simulated faults for it to find
	// (INDEX:ecc or INDEX:retired-pages, comma-separated).
	AnnotationSimulatedGPUs      = "atom.io/simulated-gpus"
	AnnotationSimulatedGPUFaults = "atom.io/simulated-gpu-faults"

	// PoolLabel on a Node puts it in that atom pool ("" or absent: public).
	PoolLabel = "atom.io/pool"

	// GPUResource is NVIDIA's device plugin's extended resource, and
	// GPUModelLabel the label GPU feature discovery puts a node's model in.
	GPUResource   = "nvidia.com/gpu"
	GPUModelLabel = "nvidia.com/gpu.product"

	// FuseResource is the extended resource a FUSE device plugin on a
	// node advertises for /dev/fuse (one unit per Pod that may mount): a
	// Pod that mounts the dataset cache asks for one where its node has
	// it, so the runtime gives the container the device and allows it in
	// its device cgroup, which a hostPath /dev/fuse alone does not. It is
	// not a device of atom's placement.
	FuseResource = "atom.io/fuse"

	// ContainerName is the name of the one container of a task's Pod.
	ContainerName = "task"
	// TokenAudience is the audience of the service-account token bound
	// to a task's Pod, projected at TokenPath (ATOM_TOKEN_FILE), that atom
	// exchanges for its allocation token; TokenExpiry its lifetime (the
	// kubelet renews it at 80%; 600 s is the API server's least).
	TokenAudience = "atom"
	TokenPath     = "/var/run/secrets/atom/token"
	TokenExpiry   = 600
	// LaunchPort is where atom serves launch requests (atom rsh, MPI) in
	// a Pod: ATOM_LAUNCH_LISTEN=0.0.0.0:7077 (atom reports it in its
	// heartbeats; the Pod declares no port: nothing reads one).
	LaunchPort = 7077
)

// PodName is task id's Pod name: the ID lowercased, every character
// outside [a-z0-9-] made '-', trimmed of leading and trailing '-'. When
// that changed the ID (or left more than 63 characters, a hostname's
// limit), a hash of the exact ID is appended so two IDs never share a
// name. The same ID always gives the same name, so a retried create finds
// its own Pod.
func PodName(id structs.TaskID) string {
	s := string(id)
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, '-')
		}
	}
	name := strings.Trim(string(b), "-")
	if name == s && len(name) <= 63 && name != "" {
		return name
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	if len(name) > 63-len(h)-1 {
		name = strings.TrimRight(name[:63-len(h)-1], "-")
	}
	if name == "" {
		return "t-" + h
	}
	return name + "-" + h
}

// allocHash is AnnotationAlloc's value for an allocation token: the first
// 8 bytes of its SHA-256, in hex. It names the allocation without giving
// the token away.
func allocHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// LabelValue returns s as a valid label value: at most 63 characters of
// [A-Za-z0-9._-], beginning and ending alphanumeric; other characters
// become '_', and a changed or shortened value gets a hash suffix.
func LabelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	v := strings.Trim(string(b), "-_.")
	if v == s && len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	if len(v) > 63-len(h)-1 {
		v = strings.TrimRight(v[:63-len(h)-1], "-_.")
	}
	if v == "" {
		return h
	}
	return v + "-" + h
}

// PriorityClass is the PriorityClass of a task of priority p:
// atom-high, atom-normal or atom-low (deploy/priorityclasses.yaml).
func PriorityClass(p structs.Priority) string {
	switch p {
	case structs.PriorityHigh:
		return "atom-high"
	case structs.PriorityLow:
		return "atom-low"
	}
	return "atom-normal"
}
