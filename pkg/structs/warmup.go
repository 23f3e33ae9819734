package structs

import "time"

// ReasonWarmUpFailed starts the reason of a job whose cache warm-up
// failed (no cluster holds a dataset, a Redis is down, a copy failed):
// the job restarts or fails by its restart policy.
const ReasonWarmUpFailed = "WarmUpFailed"

// WarmUp is a dataset cache warm-up that a job's tasks on one cluster wait
// for: the datasets that cluster's Redis lacked when they were placed. The
// leader copies them from a cluster that holds them; until it has, the
// tasks stay Scheduled and are not started. Only the leader's state
// machine writes it.
type WarmUp struct {
	Cluster  ClusterID `json:"cluster"`
	Datasets []string  `json:"datasets"`
	Attempt  int       `json:"attempt"` // the job attempt whose tasks wait
	Since    time.Time `json:"since"`
}

// WarmUpStatus is a warm-up as `job status` shows it: the committed
// record and, from the leader that runs it, its progress (zero when this
// server does not run it, or it has not counted the totals yet).
type WarmUpStatus struct {
	WarmUp
	// From names the cluster each dataset is copied from, once found.
	From       map[string]ClusterID `json:"from,omitempty"`
	Bytes      int64                `json:"bytes"`
	TotalBytes int64                `json:"totalBytes"`
	Files      int64                `json:"files"`
	TotalFiles int64                `json:"totalFiles"`
	// Running is true while the leader copies; false on a follower or
	// before the leader's next cycle has picked the warm-up up.
	Running bool `json:"running"`
	// Retries counts the times the leader tried the warm-up again
	// because a Redis was unreachable; LastError is the last such error.
	Retries   int    `json:"retries,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

// WarmingUp returns j's warm-up of cluster c for its current attempt, or
// nil when its tasks there wait for none.
func (j *Job) WarmingUp(c ClusterID) *WarmUp {
	for i := range j.WarmUps {
		if w := &j.WarmUps[i]; w.Cluster == c && w.Attempt == j.Attempt {
			return w
		}
	}
	return nil
}
