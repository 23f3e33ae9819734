package structs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// JobKind is what a job runs. Plugins may add kinds.
type JobKind string

const (
	KindMPI     JobKind = "mpi"     // gang: replica 0 launches mpirun across all
	KindSpark   JobKind = "spark"   // replica 0 is the driver; executors are Pods, not replicas (see Spark)
	KindService JobKind = "service" // long-running replicas; minAvailable first
	KindCommand JobKind = "command" // plain command; a gang when replicas > 1
)

// BuiltinKinds are the kinds atom runs without a plugin of its own.
var BuiltinKinds = []JobKind{KindMPI, KindSpark, KindService, KindCommand}

// CheckRunnable refuses a job that every one of its tasks would fail
// with: a kind neither built in nor in plugins (the kinds the
// coordinator's tasks have plugins for), or a command, service or MPI
// job without the command it runs. The spec allows both (a plugin's
// kind; a command added later): the coordinator that takes the job
// checks them, so that a job accepted is a job that can run.
func CheckRunnable(j *Job, plugins []JobKind) error {
	if !slices.Contains(BuiltinKinds, j.Kind) && !slices.Contains(plugins, j.Kind) {
		have := "this coordinator has none: an admin adds them with --plugin-dir or --job-kind"
		if len(plugins) > 0 {
			names := make([]string, len(plugins))
			for i, k := range plugins {
				names[i] = string(k)
			}
			have = "this coordinator's are " + strings.Join(names, ", ")
		}
		return bad("kind", string(j.Kind), "use mpi, spark, service or command, or a plugin's kind (%s)", have)
	}
	if len(j.Command) == 0 && (j.Kind == KindCommand || j.Kind == KindService || j.Kind == KindMPI) {
		return &FieldError{Field: "command", Msg: fmt.Sprintf("is required for kind %s: give the program and its arguments, e.g. command: [python, train.py] (args only adds to it)", j.Kind)}
	}
	return nil
}

// IsGang reports whether a job of this kind with n replicas must start all
// replicas together or none.
func (k JobKind) IsGang(replicas int) bool {
	switch k {
	case KindService:
		return false
	case KindMPI, KindSpark:
		return true
	}
	return replicas > 1
}

// JobState is a job's lifecycle state.
//
//	Pending ──place──▶ Scheduled ──all started──▶ Running ──▶ Succeeded | Failed
//	   ▲                   │                        │
//	   └──── preempted ────┴────────────────────────┘      any ──cancel──▶ Cancelled
//	Pending ──pendingTimeout──▶ Failed (reason PendingTimeout)
type JobState string

const (
	JobPending   JobState = "Pending"
	JobScheduled JobState = "Scheduled"
	JobRunning   JobState = "Running"
	JobSucceeded JobState = "Succeeded"
	JobFailed    JobState = "Failed"
	JobCancelled JobState = "Cancelled"
)

// Ended reports whether s is terminal.
func (s JobState) Ended() bool { return s == JobSucceeded || s == JobFailed || s == JobCancelled }

// Reasons recorded with state changes that programs branch on.
const (
	ReasonPendingTimeout = "PendingTimeout"
	ReasonPreempted      = "Preempted"
	ReasonTooManyPreempt = "PreemptionLimit"
	// ReasonPreflightFailed marks a task event: atom's accelerator
	// preflight failed, so the coordinator quarantines the accelerators
	// and requeues the job.
	ReasonPreflightFailed = "PreflightFailed"
	// ReasonStoppedOutside marks a task's end that atom reports after a
	// SIGTERM the coordinator did not ask for (its Pod deleted or
	// evicted, its node shutting down, a kill by hand): the coordinator
	// takes it as the end of its own stop if it was stopping the task,
	// else as the task lost, not the job's failure.
	ReasonStoppedOutside = "StoppedOutside"
	// ReasonDisconnected marks a task's end that atom reports after it
	// stopped the job because no coordinator server answered its
	// heartbeats for its --stop-after-disconnect (every server down): an
	// outage of the platform, not the job's failure. The coordinator
	// takes it as the end of its own stop if it was stopping the task,
	// else as the task lost and the job requeued (a service's replica
	// placed again) without using its restarts, as a shutdown does.
	ReasonDisconnected = "CoordinatorLost"
	// ReasonLauncherGone marks an MPI worker's failure that atom reports
	// after it stopped what the launcher had started on it (Open MPI's
	// orted) because the launcher's connection closed: mpirun, or its
	// atom rsh, ended or failed. The launcher's own end says why, so the
	// coordinator ends the job on that, not on this.
	ReasonLauncherGone = "LauncherGone"
	// ReasonShutdown marks a task's end that the coordinator running
	// it reports as it shuts down (its local processes stop with it):
	// the job is requeued, not failed, and runs again once a
	// coordinator schedules (the next `coordinator dev` on the same
	// data directory).
	ReasonShutdown = "CoordinatorShutdown"
)

// ShutdownMessage is what a task stopped by its coordinator's shutdown
// ended with.
const ShutdownMessage = "stopped: coordinator shutting down"

// Restarts is how often j was placed again after a failure of its own:
// its attempts less those that were not its fault (preemptions, failed
// preflights, tasks lost before they ran, coordinator shutdowns and
// outages).
func (j *Job) Restarts() int {
	return j.Attempt - j.Preemptions - j.PreflightFailures - j.LostUnstarted - j.Interrupted
}

// RequeueCause names a requeue that is not the job's fault, and so uses
// none of its restarts: the counter of Job it adds to.
type RequeueCause string

// The requeues that are not the job's fault, but a preemption.
const (
	CausePreflight     RequeueCause = "preflight"     // PreflightFailures
	CauseLostUnstarted RequeueCause = "lostUnstarted" // LostUnstarted
	CauseInterrupted   RequeueCause = "interrupted"   // Interrupted
)

// MaxRestarts bounds how often a batch job with restartPolicy OnFailure is
// restarted after a failure of its own (Restarts); requeues that are not
// its fault use none.
const MaxRestarts = 3

// RestartSummary says how much of its restart budget batch job j has
// used, as job status and the dashboard show it: "1 of 3 used", then the
// requeues that used none, "; requeues that used none (not the job's
// fault): 1 preemption". It is "" for jobs without a budget (services,
// restartPolicy Never).
func (j *Job) RestartSummary() string {
	if j.Kind == KindService || j.RestartPolicy != RestartOnFailure {
		return ""
	}
	s := fmt.Sprintf("%d of %d used", j.Restarts(), MaxRestarts)
	var free []string
	for _, n := range []struct {
		n         int
		one, many string
	}{
		{j.Preemptions, "preemption", "preemptions"},
		{j.PreflightFailures, "failed preflight", "failed preflights"},
		{j.LostUnstarted, "task lost before it ran", "tasks lost before they ran"},
		{j.Interrupted, "coordinator shutdown or outage", "coordinator shutdowns or outages"},
	} {
		switch {
		case n.n == 1:
			free = append(free, "1 "+n.one)
		case n.n > 1:
			free = append(free, fmt.Sprintf("%d %s", n.n, n.many))
		}
	}
	if len(free) > 0 {
		s += "; requeues that used none (not the job's fault): " + strings.Join(free, ", ")
	}
	return s
}

// AttemptNumber is attempt a (Job.Attempt, Task.Attempt, Event.Attempt:
// from 0) as people read and type it, counted from 1: the job's first run
// is attempt 1, each requeue starts the next.
func AttemptNumber(a int) int { return a + 1 }

// RestartPolicy says what happens when a replica ends or is lost.
type RestartPolicy string

const (
	RestartNever     RestartPolicy = "Never"
	RestartOnFailure RestartPolicy = "OnFailure"
	RestartAlways    RestartPolicy = "Always" // services
)

// Shape is one way to run a job: a replica count and per-replica resources.
// A job's own Replicas/Resources are shape 0; Fallbacks are shapes 1..n.
type Shape struct {
	Replicas  int       `json:"replicas"`
	Resources Resources `json:"resources"`
}

// Affinity constrains where a job's replicas go relative to each other and to
// other jobs (matched by label selectors over job labels).
type Affinity struct {
	// SpreadReplicas puts at most one replica per node (replica anti-affinity).
	SpreadReplicas bool `json:"spreadReplicas,omitempty"`
	// WithJobs: every replica must share a node with a task of a job whose
	// labels match one of these selectors.
	WithJobs []string `json:"withJobs,omitempty"`
	// AwayFromJobs: no replica may share a node with a task of a matching job.
	AwayFromJobs []string `json:"awayFromJobs,omitempty"`
}

// Job is an accepted job: its request and its scheduling status.
type Job struct {
	ID       JobID             `json:"id"`
	Name     string            `json:"name"`
	Kind     JobKind           `json:"kind"`
	Owner    UserID            `json:"owner"`
	Project  ProjectID         `json:"project,omitempty"`
	Priority Priority          `json:"priority"`
	Labels   map[string]string `json:"labels,omitempty"`

	// What to run. Image may be empty where the backend runs local processes.
	Image   string            `json:"image,omitempty"`
	Command []string          `json:"command,omitempty"` // replaces the image's command
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"` // no ATOM_* keys: atom sets those
	Volumes []Volume          `json:"volumes,omitempty"`
	Scratch *Scratch          `json:"scratch,omitempty"` // per-replica scratch space
	Configs []ConfigRef       `json:"configs,omitempty"` // ConfigMaps and Secrets, mounted or as env
	// CacheMountPath is where the Redis-FUSE dataset cache is mounted; empty
	// when the job asked for no cache. Datasets lists what it should hold.
	CacheMountPath string `json:"cacheMountPath,omitempty"`

	Replicas     int       `json:"replicas"`
	MinAvailable int       `json:"minAvailable,omitempty"` // services: place once this many fit
	Resources    Resources `json:"resources"`              // per replica

	Cluster        ClusterID           `json:"cluster,omitempty"`  // pin to one cluster
	NodeName       NodeID              `json:"nodeName,omitempty"` // pin to one node
	Selector       string              `json:"selector,omitempty"` // label selector over node tags
	Tolerations    []corev1.Toleration `json:"tolerations,omitempty"`
	Affinity       Affinity            `json:"affinity,omitempty"`
	Topology       *JobTopology        `json:"topology,omitempty"` // replicas in one domain of a topology level
	Fallbacks      []Shape             `json:"fallbacks,omitempty"`
	DowngradeAfter Duration            `json:"downgradeAfter,omitempty"`
	PendingTimeout Duration            `json:"pendingTimeout,omitempty"` // 0 = DefaultPendingTimeout
	RestartPolicy  RestartPolicy       `json:"restartPolicy,omitempty"`
	MaxPreemptions int                 `json:"maxPreemptions,omitempty"` // 0 = DefaultMaxPreemptions
	PreemptNotice  *PreemptNotice      `json:"preemptNotice,omitempty"`
	Datasets       []string            `json:"datasets,omitempty"`
	MPI            *MPIOptions         `json:"mpi,omitempty"` // kind mpi: ranks per replica, mpirun args

	// Spark is a spark job's application and executors; nil for other kinds.
	Spark *Spark `json:"spark,omitempty"`

	// Status, written only through the coordinator's state machine.
	State        JobState  `json:"state"`
	Reason       string    `json:"reason,omitempty"`
	SubmitTime   time.Time `json:"submitTime"`
	PendingSince time.Time `json:"pendingSince"`
	// StartedAt is when the current attempt started running (every
	// replica it starts with running); zero before, and again when the
	// job is requeued. EndedAt is when the job ended.
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// FirstStartedAt is when the first of its tasks first started
	// running, in any attempt; zero if none ever did. It is not reset.
	FirstStartedAt time.Time `json:"firstStartedAt,omitzero"`
	// Attempt counts the job's requeues (restarts, preemptions, and those
	// that were not its fault): 0 on its first attempt. People read it
	// counted from 1 (AttemptNumber); the API's JSON, ATOM_ATTEMPT and a
	// Spark executor's task ID (JOB-N-aATTEMPT) keep it from 0.
	Attempt      int          `json:"attempt"`
	Preemptions  int          `json:"preemptions,omitempty"`
	Shape        int          `json:"shape"` // index of the shape it runs (or last ran) with
	ChargedScope Scope        `json:"chargedScope,omitempty"`
	Charged      ResourceList `json:"charged,omitempty"` // quota held now; empty when none
	// PoolOnly is set when a normal job was accepted without public quota
	// because its project has a pool: it may run only in that pool.
	PoolOnly bool `json:"poolOnly,omitempty"`
	// PreflightFailures counts requeues after a failed accelerator
	// preflight: like Preemptions, they are not restarts (not the job's
	// fault). Restarts() is the restarts.
	PreflightFailures int `json:"preflightFailures,omitempty"`
	// LostUnstarted counts requeues after a task was lost before it ever
	// ran (its leader placed it and went before starting it): not
	// restarts either.
	LostUnstarted int `json:"lostUnstarted,omitempty"`
	// Interrupted counts requeues after the coordinator that ran its
	// tasks shut down and stopped them (ReasonShutdown), or after atom
	// stopped them when every coordinator server was down
	// (ReasonDisconnected): not restarts.
	Interrupted int `json:"interrupted,omitempty"`
	// RequeueCause is which of the counters above the requeue under way
	// adds to once it happens (a job that ends first, cancelled while
	// its tasks stop, adds to none): empty for a restart, which uses
	// one of the job's restarts, and for a preemption (Preemptions).
	RequeueCause RequeueCause `json:"requeueCause,omitempty"`
	// AttemptStop is why the coordinator is stopping the current attempt
	// whole (every task it still ran), while those tasks stop:
	// StopPreempted (preempted whole), StopGang (restarted, or requeued
	// by no fault of its own), StopShutdown (its coordinator shut down).
	// The first such stop ordered is kept; once the attempt's last task
	// has ended it decides what follows, whichever task ends last and
	// whatever that one was stopped for. Empty when no such stop is
	// under way: a service's replicas stopped one by one (preempted,
	// scaled down, restarted for new configs) are placed again as it
	// runs on.
	AttemptStop StopReason `json:"attemptStop,omitempty"`
	// WarmUps are the cache warm-ups the job's placed tasks wait for
	// (one per cluster that lacked its datasets); empty when none.
	WarmUps []WarmUp `json:"warmUps,omitempty"`
	// Services only: ReplicaRestarts counts replicas placed again after
	// one exited; CrashLoop counts those exits in a row (reset by a
	// replica that ran RestartBackoffReset). Any job: nothing of it is
	// placed again before BackoffUntil (RestartBackoff after a failure).
	ReplicaRestarts int       `json:"replicaRestarts,omitempty"`
	CrashLoop       int       `json:"crashLoop,omitempty"`
	BackoffUntil    time.Time `json:"backoffUntil,omitzero"`
	// Services only: Restart counts `coordinator service restart`s; the
	// replicas placed before the last one (Task.Restart below it) are
	// stopped and placed again one at a time, minAvailable kept.
	Restart int `json:"restart,omitempty"`
	// RestartReplica is the replica that restart stopped last, until a
	// task of it placed since runs; nil when none.
	RestartReplica *int `json:"restartReplica,omitempty"`
}

// A service replica that exits, or a batch job with restartPolicy
// OnFailure that fails, is placed again at once the first time, then
// after 10 s, 20 s, 40 s... at most 5 minutes; a service replica that ran
// 10 minutes resets its count. These are the kubelet's CrashLoopBackOff
// figures (Kubernetes, "Pod Lifecycle: container restarts").
const (
	RestartBackoffBase  = 10 * time.Second
	RestartBackoffMax   = 5 * time.Minute
	RestartBackoffReset = 10 * time.Minute
)

// RestartBackoff returns the wait before placing again after the n-th
// failure in a row (1-based): 0, then RestartBackoffBase doubling up to
// RestartBackoffMax.
func RestartBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := RestartBackoffBase
	for i := 2; i < n && d < RestartBackoffMax; i++ {
		d *= 2
	}
	return min(d, RestartBackoffMax)
}

// Volume mounts a persistent volume claim (Ceph RBD) into every replica.
type Volume struct {
	Name      string `json:"name"`      // DNS-1123 label, unique in the job
	Claim     string `json:"claim"`     // PersistentVolumeClaim name
	MountPath string `json:"mountPath"` // absolute path in the container
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Defaults applied when a job leaves them unset.
const (
	DefaultPendingTimeout = 30 * time.Minute
	DefaultMaxPreemptions = 10
)

// Timeout returns the job's pending timeout with the default applied.
func (j *Job) Timeout() time.Duration {
	if j.PendingTimeout > 0 {
		return j.PendingTimeout.D()
	}
	return DefaultPendingTimeout
}

// IsGang reports whether the job places all replicas together or none.
func (j *Job) IsGang() bool { return j.Kind.IsGang(j.Replicas) }

// ShapeAt returns shape i: 0 is the job's own, i>0 is Fallbacks[i-1].
func (j *Job) ShapeAt(i int) Shape {
	if i == 0 {
		return Shape{Replicas: j.Replicas, Resources: j.Resources}
	}
	return j.Fallbacks[i-1]
}

// NumShapes returns 1 + len(Fallbacks).
func (j *Job) NumShapes() int { return 1 + len(j.Fallbacks) }

// ChargeScope returns the scope a normal job is charged to in the public
// pool: its project's if it names one, else its owner's.
func (j *Job) ChargeScope() Scope {
	if j.Project != "" {
		return ProjectScope(j.Project)
	}
	return UserScope(j.Owner)
}

// Charge returns the quota a shape of this job charges: accelerators by type
// for accelerator jobs; cpu and memory for CPU jobs; devices for edge jobs.
func Charge(s Shape) ResourceList {
	n := int64(s.Replicas)
	r := s.Resources
	l := ResourceList{}
	switch {
	case r.Accels > 0:
		l[GPUKey(r.AccelType)] = n * r.Accels
	case len(r.Devices) > 0:
		for t, c := range r.Devices {
			l[DeviceKey(t)] = n * c
		}
	default:
		l[KeyCPU] = n * r.MilliCPU
		l[KeyMemory] = n * r.Memory
	}
	return l
}

// JobCharge returns the quota n replicas of shape s of j charge: Charge,
// plus, for a spark job whose replicas are charged at all, its most
// executors (they are bound later, within this charge). n 0 charges
// nothing.
func JobCharge(j *Job, s Shape, n int) ResourceList {
	if n <= 0 {
		return nil
	}
	l := Charge(Shape{Replicas: n, Resources: s.Resources})
	if j.Spark != nil {
		for k, v := range j.Spark.ExecutorCharge() {
			l[k] += v
		}
	}
	return l
}
