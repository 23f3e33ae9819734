package structs

// Typed identifiers. All are case-sensitive, non-empty names of at most 63
// characters (a Kubernetes DNS label) unless a type says otherwise.
type (
	ClusterID string // a Kubernetes cluster or the local machine
	NodeID    string // a machine
	PoolID    string // the public pool or a project pool
	JobID     string // assigned by the coordinator at submit
	TaskID    string // JobID + "-" + replica index (+ attempt)
	UserID    string
	ProjectID string
)

// PublicPool is the name of the one shared, quota-limited pool. Nodes with an
// empty pool belong to it.
const PublicPool PoolID = "public"
