package structs

import (
	"cmp"
	"time"
)

// EventType names what happened to a job or one of its tasks, as a
// Kubernetes Event's reason does: one CamelCase word.
type EventType string

// Job events (Task empty) and task events (Task set).
const (
	EventSubmitted   EventType = "Submitted"   // job accepted, Pending
	EventPlaced      EventType = "Placed"      // task: a replica (or executor) placed on Node with Accelerators
	EventStarted     EventType = "Started"     // task: its agent reported it running
	EventRunning     EventType = "Running"     // job: every replica it starts with runs
	EventPreempted   EventType = "Preempted"   // job: its tasks stop to make room for Related
	EventPreempting  EventType = "Preempting"  // job: Related (a low job) stops to make room for it
	EventLost        EventType = "Lost"        // task: its agent went silent or it was stopped from outside
	EventStopped     EventType = "Stopped"     // task: ended after the coordinator asked it to stop
	EventSucceeded   EventType = "Succeeded"   // task exited 0, or job succeeded
	EventFailed      EventType = "Failed"      // task exited non-zero (ExitCode), or job failed (Message says why)
	EventRestarting  EventType = "Restarting"  // job: a replica ended; it (or the whole job, using one of its restarts) is placed again
	EventRequeuing   EventType = "Requeuing"   // job: stopped by no fault of its own (shutdown, outage, preflight); its tasks stop, then Requeued without using a restart
	EventRequeued    EventType = "Requeued"    // job: Pending again with a new attempt
	EventCancelled   EventType = "Cancelled"   // job cancelled
	EventScaled      EventType = "Scaled"      // service: replica count changed
	EventQuarantined EventType = "Quarantined" // task: accelerators it ran on failed preflight and were taken out of service
)

// Event is one change in a job's life, with the time it happened and a
// reason a person can read. The coordinator's state machine records it
// while it applies the change: Time is the time the change's command
// carries (never a clock read), so every server records the same events.
type Event struct {
	// Seq numbers the cluster's events in the order they were recorded,
	// from 1; GET /v1/events?since=SEQ returns those after SEQ.
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Job     JobID     `json:"job"`
	Type    EventType `json:"type"`
	Message string    `json:"message"`
	// Attempt is the job's attempt the event belongs to, from 0, as
	// Job.Attempt counts it.
	Attempt int `json:"attempt"`
	// Task, Replica and Node name the task of a task event.
	Task    TaskID `json:"task,omitempty"`
	Replica *int   `json:"replica,omitempty"`
	Node    NodeID `json:"node,omitempty"`
	// Accelerators are the node's accelerator indices the task holds
	// (Placed) or that were quarantined (Quarantined).
	Accelerators []int `json:"accelerators,omitempty"`
	// ExitCode is a task's exit code (Succeeded, Failed, Stopped).
	ExitCode *int `json:"exitCode,omitempty"`
	// Related is the other job of a preemption: the preemptor of a
	// Preempted event, the victim of a Preempting one.
	Related JobID `json:"related,omitempty"`
	// GPUSeconds, on Preempted and Preempting events, is the accelerator time the
	// victim's stopped tasks had run in this attempt (work lost unless
	// the job checkpointed): accelerators × seconds since each started.
	GPUSeconds int64 `json:"gpuSeconds,omitempty"`
	// Freed, on Preempted and Preempting events, is what the victim's
	// stopped tasks held, summed over them.
	Freed *Resources `json:"freed,omitempty"`
}

// CompareEvents orders events as they happened: by time, then in the
// order they were recorded (Seq). The time a task event carries is its
// node's, reported later, so the order recorded alone can put a task's
// start after a later event.
func CompareEvents(a, b Event) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}
