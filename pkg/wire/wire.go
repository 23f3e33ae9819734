// Package wire holds the JSON bodies of the coordinator's HTTP API (/v1),
// shared by the server (coordinator/api) and its Go client
// (pkg/client). It imports only the pure domain packages, never
// Raft or Prometheus, so the atom agent can use the client.
//
// Secrets: no type here carries an allocation token. Tasks are sent as
// structs.Task, which has no token field; tokens live only in the
// replicated state's token table, which the API never serialises.
package wire

import (
	"fmt"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Request headers and query parameters.
const (
	// HeaderIdempotencyKey carries the client's request ID on POST
	// /v1/jobs. The query parameter QueryRequestID is the alternative.
	HeaderIdempotencyKey = "Idempotency-Key"
	QueryRequestID       = "requestID"
	// MaxRequestIDLen bounds a request ID.
	MaxRequestIDLen = 128
)

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	// Quota is set when a quota limit refused the request (409).
	Quota *sched.QuotaShortfall `json:"quota,omitempty"`
	// Why is set when the job can never fit (422).
	Why *sched.Why `json:"why,omitempty"`
}

// SubmitResponse answers POST /v1/jobs: 201 for a new job, 200 for a retry
// whose request ID already made one.
type SubmitResponse struct {
	JobID     structs.JobID `json:"jobID"`
	Existing  bool          `json:"existing"`            // a retry: the job already existed
	RequestID string        `json:"requestID,omitempty"` // as the client sent it
	Job       *structs.Job  `json:"job,omitempty"`
}

// JobList answers GET /v1/jobs.
type JobList struct {
	Jobs []*structs.Job `json:"jobs"`
}

// JobStatus answers GET /v1/jobs/{id} and the job's write endpoints: the
// job and its tasks (every attempt, by index then attempt).
type JobStatus struct {
	Job   *structs.Job    `json:"job"`
	Tasks []*structs.Task `json:"tasks"`
	// WarmUps are the cache warm-ups the job's tasks wait for, with the
	// leader's progress (bytes and files copied of the totals).
	WarmUps []structs.WarmUpStatus `json:"warmUps,omitempty"`
	// CacheAt, for a job that mounts the dataset cache, says where its
	// tasks see it: the job's mountPath on a kubernetes cluster; on a
	// local cluster each task mounts its own, in its task directory
	// (the job reads $ATOM_CACHE_DIR).
	CacheAt string `json:"cacheAt,omitempty"`
}

// WhyResponse answers GET /v1/jobs/{id}/why.
type WhyResponse struct {
	Job   structs.JobID    `json:"job"`
	State structs.JobState `json:"state"`
	// Pending is true while the job (or some replicas of a service) waits
	// to be placed.
	Pending bool `json:"pending"`
	// Message is one line for people: the why-pending reason, "not
	// pending", or that the scheduler has not looked at the job yet.
	Message string     `json:"message"`
	Why     *sched.Why `json:"why,omitempty"`
	// Queue is the job's place in the scheduler's order and its scope's
	// fair-share standing, while it waits.
	Queue *sched.QueuePlace `json:"queue,omitempty"`
}

// ScaleRequest is the body of POST /v1/jobs/{id}/scale.
// Replicas is required; 0 parks a service (its replicas stop, its spec
// stays).
type ScaleRequest struct {
	Replicas *int `json:"replicas"`
}

// QuotaStatus answers GET and PUT /v1/quotas/{scope}: the scope's limits
// (a key not listed is 0) and what its jobs hold now.
type QuotaStatus struct {
	Scope  structs.Scope        `json:"scope"`
	Limits structs.ResourceList `json:"limits"`
	Usage  structs.ResourceList `json:"usage"`
	// FairShare is the scope's fair-share standing: its weight, its
	// usage in GPU-seconds decayed to now, and its share of the usage
	// and of the weights of the scopes that compete now (those with jobs
	// that have not ended; the scope counted among them).
	FairShare sched.Standing `json:"fairShare"`
}

// QuotaList answers GET /v1/quotas: the scopes the caller may read.
type QuotaList struct {
	Quotas []QuotaStatus `json:"quotas"`
}

// PoolList answers GET /v1/pools: the project pools (the public pool is
// implicit).
type PoolList struct {
	Pools []*structs.Pool `json:"pools"`
}

// NodeStatus is a node with what its tasks hold now.
type NodeStatus struct {
	structs.Node
	// Allocated sums the resources of the tasks that hold the node.
	Allocated structs.Resources `json:"allocated"`
	Tasks     int               `json:"tasks"` // tasks holding resources
	// Domains are the node's topology domains, widest first: one per
	// level of its cluster's topology where it has the level's label.
	Domains []NodeDomain `json:"domains,omitempty"`
}

// NodeDomain is a node's domain at one topology level: its value of the
// level's label.
type NodeDomain struct {
	Level  string `json:"level"`  // the label key
	Domain string `json:"domain"` // its value
}

// NodeList answers GET /v1/nodes.
type NodeList struct {
	Nodes []NodeStatus `json:"nodes"`
}

// ClusterList answers GET /v1/clusters.
type ClusterList struct {
	Clusters []*structs.Cluster `json:"clusters"`
}

// Heartbeat is the body of POST /v1/tasks/{id}/heartbeat: what atom
// reports about its own task. Task may be empty (the path names it);
// State is Running, Succeeded or Failed.
type Heartbeat = structs.TaskEvent

// HeartbeatResponse tells atom what the coordinator wants of its task:
// State Stopping (with StopReason) means stop with the grace period.
type HeartbeatResponse struct {
	Task       structs.TaskID     `json:"task"`
	State      structs.TaskState  `json:"state"`
	StopReason structs.StopReason `json:"stopReason,omitempty"`
	// NoticeUntil, on a task Stopping because it was preempted, for a job
	// with a preemptNotice, is when the notice ends: atom writes it to the
	// notice file, sends NoticeSignal (if any), and SIGTERM then.
	NoticeUntil  time.Time `json:"noticeUntil,omitzero"`
	NoticeSignal string    `json:"noticeSignal,omitempty"`
}

// PeerList answers GET /v1/tasks/{id}/peers: the tasks of the job's
// current attempt that hold resources, by index, for launchers such as
// mpirun's.
type PeerList struct {
	Job     structs.JobID `json:"job"`
	Attempt int           `json:"attempt"` // from 0, as structs.Job's
	Peers   []Peer        `json:"peers"`
}

// Peer is one task of a job as its siblings see it.
type Peer struct {
	Task  structs.TaskID    `json:"task"`
	Index int               `json:"index"`
	Node  structs.NodeID    `json:"node"`
	State structs.TaskState `json:"state"`
	// Endpoint is where the task's atom serves launch requests (atom
	// rsh), host:port; empty until its agent has reported one.
	Endpoint string `json:"endpoint,omitempty"`
}

// EventList answers GET /v1/events and GET /v1/jobs/{id}/events: events
// in the order they happened, oldest first (structs.CompareEvents).
type EventList struct {
	// Job is set on a job's events.
	Job    structs.JobID   `json:"job,omitempty"`
	Events []structs.Event `json:"events"`
	// Dropped, on a job's events, counts its oldest events no longer
	// kept: a job keeps its newest 100.
	Dropped int `json:"dropped,omitempty"`
	// Truncated is set when older events that match were left out to
	// keep to the limit.
	Truncated bool `json:"truncated,omitempty"`
	// Latest is the number (Seq) of the cluster's newest event, whether
	// or not the caller may see it: ask with since=Latest for what
	// comes after.
	Latest uint64 `json:"latest"`
}

// HiddenTasksHeader is set on a logs response whose current-attempt view
// leaves out stopped tasks: their count. With ?hidden=header the body
// does not end with HiddenTasksNote, so a client may say it elsewhere
// (the CLI: on stderr, apart from the output).
const HiddenTasksHeader = "Atom-Hidden-Tasks"

// HiddenTasksNote says that n stopped tasks of job id are not shown.
func HiddenTasksNote(n int, id string) string {
	return fmt.Sprintf("(%d stopped task(s) of earlier attempts or replaced replicas not shown: coordinator job logs --all %s shows them)", n, id)
}
