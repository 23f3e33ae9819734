package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Cache warm-up: a job goes to a cluster whose cache holds all its
// datasets when one can take it; else the cache where it goes is warmed
// first. A placement whose cluster's cache lacks some of the job's
// datasets (sched.Placement.Warm) records a structs.WarmUp on the job. Its tasks on that cluster stay Scheduled and are not started
// (Warming) until the leader, which copies the datasets, commits WarmUpEnd:
// done, they start; failed, the job restarts or fails by its policy.
//
//	PlanCommit (Warm) ──▶ job.WarmUps += {cluster, datasets, attempt}
//	        │                      tasks there: Warming (not started, not reaped)
//	        ├── WarmUpEnd ok ────▶ entry removed: the leader starts the tasks
//	        ├── WarmUpEnd error ─▶ tasks end; WarmUpFailed: requeue or fail
//	        └── cancel / requeue ▶ entry dropped with the attempt

// WarmUpEnd ends job Job's warm-up of Cluster for Attempt: done when
// Error is empty, else failed with Error as the reason. A warm-up that no
// longer exists (the job ended or moved on to another attempt) is
// ignored: a late report.
type WarmUpEnd struct {
	Job     structs.JobID     `json:"job"`
	Cluster structs.ClusterID `json:"cluster"`
	Attempt int               `json:"attempt"`
	Error   string            `json:"error,omitempty"`
	Now     time.Time         `json:"now"`
}

// MsgWarmUpEnd is WarmUpEnd's log type (14 is MsgExecutorAdd's: the
// values of commands.go and this one must stay distinct).
const MsgWarmUpEnd MsgType = 15

func init() { register(MsgWarmUpEnd, func() Command { return &WarmUpEnd{} }) }

func (*WarmUpEnd) Type() MsgType { return MsgWarmUpEnd }

func (c *WarmUpEnd) apply(s *State) (any, error) {
	j := s.Jobs[c.Job]
	if j == nil || j.State.Ended() || j.Attempt != c.Attempt || j.WarmingUp(c.Cluster) == nil {
		return nil, nil
	}
	if c.Error != "" && j.AttemptStop == "" {
		s.warmUpFailed(j, c.Cluster, c.Error, c.Now)
	} else {
		// Done; or failed for an attempt being stopped whole already
		// (preempted, restarting): that stop decides what follows, and
		// the next attempt warms its cache again.
		s.dropWarmUp(j.ID, c.Cluster)
	}
	return nil, nil
}

// dropWarmUp removes job id's warm-up of cluster.
func (s *State) dropWarmUp(id structs.JobID, cluster structs.ClusterID) {
	s.putJob(id, func(j *structs.Job) {
		j.WarmUps = slices.DeleteFunc(slices.Clone(j.WarmUps), func(w structs.WarmUp) bool { return w.Cluster == cluster })
		if len(j.WarmUps) == 0 {
			j.WarmUps = nil
		}
	})
}

// Warming reports whether task t waits for a cache warm-up: it is
// Scheduled, of its job's current attempt, on a cluster its job warms.
func (s *State) Warming(t *structs.Task) bool {
	if t.State != structs.TaskScheduled {
		return false
	}
	j, n := s.Jobs[t.Job], s.Nodes[t.Node]
	return j != nil && n != nil && t.Attempt == j.Attempt && j.WarmingUp(n.Cluster) != nil
}

// noteWarmUp records placement pl's warm-up on job j (called by place).
func (s *State) noteWarmUp(j *structs.Job, pl *sched.Placement, now time.Time) {
	if len(pl.Warm) == 0 || len(pl.Tasks) == 0 {
		return
	}
	n := s.Nodes[pl.Tasks[0].Node]
	if n == nil {
		return
	}
	s.putJob(j.ID, func(j *structs.Job) {
		ws := slices.DeleteFunc(slices.Clone(j.WarmUps), func(w structs.WarmUp) bool { return w.Attempt != j.Attempt })
		for i := range ws {
			if ws[i].Cluster == n.Cluster { // more replicas of a service: one warm-up
				ds := slices.Clone(ws[i].Datasets)
				for _, d := range pl.Warm {
					if !slices.Contains(ds, d) {
						ds = append(ds, d)
					}
				}
				ws[i].Datasets = ds
				j.WarmUps = ws
				return
			}
		}
		j.WarmUps = append(ws, structs.WarmUp{Cluster: n.Cluster, Datasets: slices.Clone(pl.Warm), Attempt: j.Attempt, Since: now})
	})
}

// endWarming ends j's tasks that wait for a warm-up: they never started,
// so there is nothing to stop and no agent to report their end. They
// keep why (msg); they failed when the warm-up did (stop empty), and are
// Stopped, with the stop's reason, when their job was stopped.
func (s *State) endWarming(j *structs.Job, cluster structs.ClusterID, msg string, stop structs.StopReason, now time.Time) int {
	st, kind := structs.TaskFailed, structs.EventFailed
	if stop != "" {
		st, kind = structs.TaskStopped, structs.EventStopped
	}
	n := 0
	for _, t := range s.TasksOf(j.ID) {
		if nd := s.Nodes[t.Node]; s.Warming(t) && (cluster == "" || (nd != nil && nd.Cluster == cluster)) {
			t = s.putTask(t.ID, func(t *structs.Task) {
				t.State, t.Message, t.StopReason, t.EndedAt = st, msg, stop, now
			})
			s.record(taskEventOf(now, t, kind, "%s %s", replicaName(t), msg))
			n++
		}
	}
	return n
}

// warmUpFailed handles a failed warm-up of j on cluster: the tasks that
// waited for it end, and the job restarts (a new attempt, placed afresh)
// or fails, by its restart policy, as if a replica had failed. A
// service's replicas are placed again by the next cycle.
func (s *State) warmUpFailed(j *structs.Job, cluster structs.ClusterID, msg string, now time.Time) {
	why := fmt.Sprintf("%s: cache warm-up of cluster %s failed: %s", structs.ReasonWarmUpFailed, cluster, msg)
	s.endWarming(j, cluster, "never started: "+why, "", now)
	s.dropWarmUp(j.ID, cluster)
	j = s.Jobs[j.ID]
	if j.Kind == structs.KindService {
		s.putJob(j.ID, func(j *structs.Job) { j.Reason = why })
		return
	}
	restarts := j.Restarts()
	if j.RestartPolicy != structs.RestartOnFailure || restarts >= MaxRestarts {
		s.endJob(j.ID, structs.JobFailed, why+noRestartsLeft(j, restarts), now, structs.StopCancelled)
		return
	}
	s.putJob(j.ID, func(j *structs.Job) {
		j.Reason = restarting(restarts, why)
		j.BackoffUntil = now.Add(structs.RestartBackoff(restarts + 1))
	})
	s.restart(j.ID, restarting(restarts, why), now, true, structs.StopGang)
}
