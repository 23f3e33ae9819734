package structs

import "time"

// TaskEvent is what an agent or backend reported about one task.
type TaskEvent struct {
	Task     TaskID    `json:"task"`
	State    TaskState `json:"state"` // Running, Succeeded, Failed or Lost
	ExitCode int       `json:"exitCode,omitempty"`
	Healthy  *bool     `json:"healthy,omitempty"`
	Message  string    `json:"message,omitempty"`
	Time     time.Time `json:"time"`
	// Endpoint, on a Running event, is where the task's atom serves launch
	// requests (host:port); empty leaves the recorded one.
	Endpoint string `json:"endpoint,omitempty"`
	// Reason, on a Failed event, says the failure is not the job's own:
	// ReasonPreflightFailed (atom's accelerator check failed).
	// Accelerators then lists the node's accelerator indices found bad,
	// if atom could tell (none: all of the task's). On a Succeeded or
	// Failed event, ReasonStoppedOutside says atom stopped the job
	// after a SIGTERM the coordinator had not asked for (stoppedOutside),
	// and ReasonDisconnected that it stopped the job when no coordinator
	// server answered for its --stop-after-disconnect.
	Reason       string `json:"reason,omitempty"`
	Accelerators []int  `json:"accelerators,omitempty"`
}
