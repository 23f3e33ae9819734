package sched

import (
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Snapshot is the cluster state a decision is made on. Schedule never
// mutates it or anything it points to.
type Snapshot struct {
	Index  uint64                                 // Raft index the snapshot was taken at
	Nodes  []*structs.Node                        // every known node
	Pools  []*structs.Pool                        // project pools; the public pool is implicit
	Quotas map[structs.Scope]structs.ResourceList // public-pool limits per scope
	Usage  map[structs.Scope]structs.ResourceList // quota charged now per scope
	Jobs   map[structs.JobID]*structs.Job         // every job that has not ended
	Tasks  []*structs.Task                        // tasks that hold resources (Scheduled, Running, Stopping)
	// Reservations made by earlier plans (preemptors waiting for victims to
	// stop, the oldest blocked gang per pool).
	Reservations []Reservation
	// Ended counts, per job, the replicas of its current attempt that have
	// ended (replicas of a gang finish one by one). Only the invariant
	// checker reads it: they were placed with the gang. Optional.
	Ended map[structs.JobID]int
	// Cache says, for each cluster that has a dataset cache (a Redis),
	// which of the pending jobs' datasets it holds completely. The
	// leader finds out (the core does no I/O); a cluster missing here
	// has no cache, and a dataset missing under a cluster is not held.
	// Optional: nil means the leader did not look (no pending job mounts
	// a cache); then the core does not restrict where such jobs go. When
	// set, a job that mounts the cache (CacheMountPath) goes only to
	// clusters listed here.
	Cache map[structs.ClusterID]map[string]bool
	// Volumes says, for each kubernetes cluster, which of the claims the
	// pending jobs name (their volumes) it holds: PersistentVolumeClaims
	// of its namespace, not being deleted. The leader reads them from the
	// clusters' claim informers. Optional: nil means the leader did not
	// look (no cluster is a kubernetes one, or no pending job names a
	// volume); then a claim name is one volume across clusters and does
	// not restrict where jobs go. When set, the same name in two clusters
	// is two volumes, and a job naming volumes goes only to a cluster
	// listed here that holds them all (so never to a local cluster).
	Volumes map[structs.ClusterID]map[string]bool
	// NoExecutors lists the clusters where a spark job's driver asks for
	// no executor Pods: those that are not kubernetes clusters, where
	// Spark runs in local mode on the driver's cores. There the driver
	// is placed alone. Optional: nil means every cluster runs executors.
	NoExecutors map[structs.ClusterID]bool
	// Topology lists, per cluster, its topology levels: node label keys,
	// widest first (structs.Topology). Optional: a cluster missing here
	// has none, and jobs asking for a level it lacks may not run there
	// when they require it.
	Topology map[structs.ClusterID][]string
	// Clusters lists the declared clusters (coordinator cluster list),
	// whether or not nodes are in them yet. Optional: nil knows a cluster
	// only by its nodes. A job naming a declared cluster no node is in
	// yet is accepted (quota still applies) and waits for nodes to join
	// it, saying so; one naming a cluster neither declared nor holding
	// nodes is refused.
	Clusters map[structs.ClusterID]bool
	// FairShare orders the pending jobs of one priority by their scope's
	// fair share (order.go); Positions computes it from the usage.
	// Optional: nil orders them oldest first.
	FairShare *FairShare
}

// Input is what to decide about.
type Input struct {
	// Pending lists jobs that want replicas placed: Pending jobs, and
	// services with fewer live tasks than replicas. Order does not matter.
	Pending []*structs.Job
	Now     time.Time
	// WholeServices makes a low service a victim whole, as any job,
	// instead of losing only the replicas a preemptor needs: the victim
	// choice of earlier releases, for comparisons (make sim).
	WholeServices bool
	// ResourcesBeforeWork ranks victim sets by the accelerators and CPU
	// they free before the work they lose: the victim choice of earlier
	// releases, for comparisons (make sim).
	ResourcesBeforeWork bool
	// Seed is reserved for randomised tie-breaks (e.g. the snapshot
	// index). Today's policy breaks ties by node order and does not read it.
	Seed uint64
	// OnDecision, if set, is called after each job's decision (placed or
	// not), in order. Benchmarks and metrics time decisions with it; the
	// core itself reads no clock.
	OnDecision func(job structs.JobID, placed bool)
}

// Plan is a scheduling decision. The caller commits it through Raft; the
// state machine re-checks capacity and quota when it applies it.
type Plan struct {
	Index        uint64
	Placements   []Placement
	Preemptions  []Preemption
	Reservations []Reservation // the complete set to hold after this plan
	Timeouts     []Timeout
	// Pending says why each still-pending job did not place. Jobs asking
	// the same question share one *Why: treat it as read-only.
	Pending map[structs.JobID]*Why
}

// Placement places replicas of one job (a gang: all of them, in one pool).
type Placement struct {
	Job   structs.JobID
	Shape int // 0 = the job's own shape, i = Fallbacks[i-1]
	Tasks []TaskPlacement
	// Charge is the job's quota charge after this placement: nil when the
	// job holds no quota (placed in a project pool, or high/low priority).
	// When unchanged it is the job's own Charged map: read-only.
	Charge structs.ResourceList
	// Warm lists the job's datasets the cache of the placement's cluster
	// lacks (Snapshot.Cache): the tasks wait until the leader has copied
	// them there from a cluster that holds them. Empty when the cluster
	// holds them all or has no cache.
	Warm []string
	// Held is the room held for a spark job's minimum executors, placed
	// with its driver as one gang (ReserveMinExecutors, one per
	// executor): the state keeps it (setting Made) until its executor
	// Pods bind into it, or the job stops running.
	Held []Reservation `json:",omitempty"`
}

// TaskPlacement puts one replica on one node.
type TaskPlacement struct {
	// ID names the task. The core leaves it empty; whoever commits the
	// plan names each new task uniquely (a replica placed again is a new
	// task with a new ID and a new allocation token).
	ID        structs.TaskID
	Index     int
	Node      structs.NodeID
	Pool      structs.PoolID
	Resources structs.Resources // allocated: accelerator replicas get their bound CPU and memory
	Accels    structs.AccelMask
}

// Preemption evicts a low-priority job to make room for Preemptor: the
// whole job (Tasks lists its live tasks), or with Replicas only Tasks,
// replicas of a service that keeps running its others.
type Preemption struct {
	Victim    structs.JobID
	Preemptor structs.JobID
	Tasks     []structs.TaskID
	Replicas  bool `json:",omitempty"`
}

// Reservation holds resources on a node for one job: nobody else may use
// them until the job is placed, ends or the reservation is dropped.
type Reservation struct {
	Job       structs.JobID
	Node      structs.NodeID
	Resources structs.Resources
	Kind      ReservationKind
	// Executor is the Spark executor Pod a ReserveExecutor reservation
	// holds room for (its job runs; the executor is not placed yet).
	Executor string `json:",omitempty"`
	// Made is the Raft index of the command that made an executor
	// reservation (ReserveExecutor, ReserveMinExecutors): a plan computed
	// on an earlier snapshot did not see it and keeps it as it is.
	Made uint64 `json:",omitempty"`
	// Freed is when a cycle first saw no task stopping on the node of an
	// executor reservation (its victims gone); it lapses ExecutorHold
	// later if the executor has not taken it.
	Freed time.Time `json:",omitzero"`
}

// ReservationKind says why a reservation exists.
type ReservationKind string

const (
	ReservePreemption ReservationKind = "preemption" // freed by victims for the preemptor
	ReserveGang       ReservationKind = "gang"       // oldest blocked gang in its pool
	ReserveExecutor   ReservationKind = "executor"   // freed by victims for a running job's executor Pod
	// ReserveMinExecutors is room for one of a spark job's minimum
	// executors, held from its driver's placement until an executor Pod
	// of the job binds into it (TakeHeld), or the job stops running. It
	// binds every other job, whatever its priority: a higher one gets
	// it only by preempting the whole (low) spark job.
	ReserveMinExecutors ReservationKind = "min-executors"
)

// ExecutorHold is how long the room freed for an executor Pod stays held
// for it after its victims have gone: the executor is placed outside the
// cycle (when its Pod is next tried), so one cycle may be too short.
const ExecutorHold = 30 * time.Second

// Timeout ends a job that stayed pending past its pendingTimeout.
type Timeout struct {
	Job    structs.JobID
	Reason string // structs.ReasonPendingTimeout
	Why    *Why   // the last why-pending reason, kept in the final status
}
