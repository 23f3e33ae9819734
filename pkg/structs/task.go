package structs

import (
	"fmt"
	"math/bits"
	"time"
)

// TaskState is one replica allocation's state.
type TaskState string

const (
	TaskScheduled TaskState = "Scheduled" // placed; container starting
	TaskRunning   TaskState = "Running"
	TaskStopping  TaskState = "Stopping" // SIGTERM sent (preempted, cancelled, scaled down); still holds resources
	TaskSucceeded TaskState = "Succeeded"
	TaskFailed    TaskState = "Failed"
	TaskLost      TaskState = "Lost" // heartbeats stopped past the TTL
	// TaskStopped: it ended because the coordinator stopped it
	// (StopReason says why), not on its own: neither a success nor its
	// failure, whatever it exited with (ExitCode).
	TaskStopped TaskState = "Stopped"
)

// HoldsResources reports whether a task in state s occupies its node.
func (s TaskState) HoldsResources() bool {
	return s == TaskScheduled || s == TaskRunning || s == TaskStopping
}

// StopReason says why atom stops a task.
type StopReason string

const (
	StopPreempted StopReason = "Preempted" // evicted for a higher-priority job; the job is requeued
	StopCancelled StopReason = "Cancelled" // the job was cancelled
	StopScaled    StopReason = "ScaledDown"
	StopGang      StopReason = "GangRestart" // another replica failed or was lost: the whole job stops, then is requeued
	StopJobEnded  StopReason = "JobEnded"    // a replica's end ended the job (an MPI launcher's, a failure): the rest stop
	StopRestarted StopReason = "Restarted"   // coordinator service restart: placed again, with its configs' newest versions
	// StopShutdown: the coordinator running the job's tasks shut down;
	// the job is requeued (a service's replica placed again) without
	// using a restart. A task it ended is recorded at once, with
	// ShutdownMessage and no exit code: its process is stopped after.
	StopShutdown StopReason = ReasonShutdown
)

// ExitReported reports whether t ended with its process's exit code
// (ExitCode): false while it holds resources, once lost, and when the
// coordinator recorded its end itself: a task it ended before it started
// (its cache warm-up failed, its job ended meanwhile), or one it stopped
// as it shut down.
func (t *Task) ExitReported() bool {
	switch {
	case t.State != TaskSucceeded && t.State != TaskFailed && t.State != TaskStopped:
		return false
	case t.Message == ShutdownMessage:
		return false
	}
	return !(t.StartedAt.IsZero() && t.ExitCode == 0 && t.Message != "")
}

// AccelMask is a set of accelerator indices on one node (bit i = index i).
type AccelMask uint64

// Count returns how many accelerators the mask holds.
func (m AccelMask) Count() int { return bits.OnesCount64(uint64(m)) }

// Indices lists the accelerator indices in ascending order.
func (m AccelMask) Indices() []int {
	out := make([]int, 0, m.Count())
	for v := uint64(m); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// Task is one replica of a job placed on one node.
type Task struct {
	ID       TaskID    `json:"id"`
	Job      JobID     `json:"job"`
	Index    int       `json:"index"`   // replica index, 0-based
	Attempt  int       `json:"attempt"` // its job's attempt, from 0 (Job.Attempt)
	Node     NodeID    `json:"node"`
	Pool     PoolID    `json:"pool"`
	Priority Priority  `json:"priority"`
	State    TaskState `json:"state"`

	// Allocated on the node: the replica's request, with accelerator
	// replicas given the CPU and memory bound to their accelerators.
	Resources Resources `json:"resources"`
	Accels    AccelMask `json:"accels,omitempty"`
	// Devices are the node's edge devices the task holds, by type: their
	// indices, 0 to the node's count of that type less one (as Accels
	// are its accelerators').
	Devices map[string][]int `json:"devices,omitempty"`

	// StopReason says why a Stopping task is being stopped, and why a
	// Stopped one was.
	StopReason StopReason `json:"stopReason,omitempty"`
	// NoticeUntil, on a task Stopping for a job with a preemptNotice, is
	// when its notice ends: atom warns the job and sends SIGTERM then;
	// the backend stops it only after.
	NoticeUntil time.Time `json:"noticeUntil,omitzero"`

	// Endpoint is where the task's atom serves launch requests (atom rsh),
	// host:port, as its heartbeats last reported it.
	Endpoint string `json:"endpoint,omitempty"`

	// Executor, for a spark job's executor, names its Pod (which Spark
	// created and atom bound): such a task is no replica of its job (its
	// Index is past the job's replicas), and its end neither ends nor
	// restarts the job. Empty for replicas.
	Executor string `json:"executor,omitempty"`

	Healthy     bool      `json:"healthy,omitempty"`  // services: passing health checks
	Restarts    int       `json:"restarts,omitempty"` // crash restarts in this attempt
	ScheduledAt time.Time `json:"scheduledAt"`
	StartedAt   time.Time `json:"startedAt,omitzero"` // its agent reported it running
	EndedAt     time.Time `json:"endedAt,omitzero"`   // it ended (exited, was lost or never started)
	ExitCode    int       `json:"exitCode,omitempty"`
	// TokenIssued is set once the task's atom has exchanged its Pod's
	// service-account token for the allocation token (Kubernetes): the
	// exchange is answered once.
	TokenIssued bool `json:"tokenIssued,omitempty"`
	// TokenNonce is the hash of the nonce that exchange came with: the
	// same nonce again (atom's retry) is answered again.
	TokenNonce string `json:"tokenNonce,omitempty"`
	// Configs are the versions of the job's atom configs and secrets the
	// task got, as they were when it was placed.
	Configs []TaskConfig `json:"configs,omitempty"`
	// Restart is the job's Restart when the task was placed: a service
	// restart stops, one at a time, the replicas placed before it.
	Restart int `json:"restart,omitempty"`
	// Message says why an ended task ended, when more than its exit code
	// tells: "PreflightFailed: ...", "lost: no heartbeat for 15s".
	Message string `json:"message,omitempty"`
}

// MakeTaskID returns the ID of replica index of job attempt.
func MakeTaskID(j JobID, index, attempt int) TaskID {
	return TaskID(fmt.Sprintf("%s-%d-a%d", j, index, attempt))
}

// NewTaskID names a new task of replica index of job j: the job, the
// index and a suffix (e.g. 4 random hex digits) that makes it unique.
func NewTaskID(j JobID, index int, suffix string) TaskID {
	return TaskID(fmt.Sprintf("%s-%d-%s", j, index, suffix))
}

// RunsReplicaOf reports whether t, a task of job j, is a replica (not a
// Spark executor) of j's current attempt that is running now.
func (t *Task) RunsReplicaOf(j *Job) bool {
	return t.Attempt == j.Attempt && t.Executor == "" && t.State == TaskRunning
}
