package wire

import "github.com/atom-sched/atom/pkg/structs"

// VolumeSpec is the body of POST /v1/volumes: a persistent volume to
// create (coordinator volume create NAME --size 100Gi [--cluster C]).
type VolumeSpec struct {
	Name string `json:"name"` // a DNS-1123 subdomain: the PersistentVolumeClaim's name
	// Size is a quantity (100Gi).
	Size structs.Quantity `json:"size"`
	// Cluster is the kubernetes cluster to create it in; empty: the only
	// one there is.
	Cluster structs.ClusterID `json:"cluster,omitempty"`
}

// Volume is a persistent volume: a PersistentVolumeClaim of storage class
// ceph-rbd in a kubernetes cluster, which jobs name in their volumes
// (claim: NAME).
type Volume struct {
	Name    string            `json:"name"`
	Cluster structs.ClusterID `json:"cluster"`
	Size    int64             `json:"size"` // bytes asked for
	Class   string            `json:"class"`
	Phase   string            `json:"phase,omitempty"` // the claim's: Pending until bound, then Bound
	Owner   structs.UserID    `json:"owner,omitempty"`
	// UsedBy lists the jobs, not ended, whose volumes name it.
	UsedBy []structs.JobID `json:"usedBy,omitempty"`
}

// VolumeList answers GET /v1/volumes.
type VolumeList struct {
	Volumes []Volume `json:"volumes"`
}
