package state

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// KeepEndedReplicas is how many ended tasks a service keeps in the state
// (the newest); older ones are dropped as replicas end, so a service that
// crash-loops for weeks does not grow the state.
const KeepEndedReplicas = 10

// replicaExited runs when replica t of service j ended on its own. The
// next cycle places it again, after the back-off when the replica
// exited (a lost replica, whose node or atom went, is placed again at
// once: that is not the service's fault).
func (s *State) replicaExited(j *structs.Job, t *structs.Task, e structs.TaskEvent) {
	s.putJob(j.ID, func(j *structs.Job) {
		j.ReplicaRestarts++
		if e.State == structs.TaskLost {
			j.Reason = fmt.Sprintf("replica %d %s; placing it again", t.Index, describeExit(e))
			return
		}
		if !t.StartedAt.IsZero() && e.Time.Sub(t.StartedAt) >= structs.RestartBackoffReset {
			j.CrashLoop = 0
		}
		j.CrashLoop++
		wait := structs.RestartBackoff(j.CrashLoop)
		j.BackoffUntil = e.Time.Add(wait)
		exit := describeExit(e)
		if e.State == structs.TaskSucceeded {
			exit = "exited 0"
		}
		j.Reason = fmt.Sprintf("replica %d %s; placing it again", t.Index, exit)
		if wait > 0 {
			j.Reason += fmt.Sprintf(" after a back-off of %s (%d exits in a row, of any replica)", wait, j.CrashLoop)
		}
	})
	s.jobEvent(e.Time, j.ID, structs.EventRestarting, "%s", s.Jobs[j.ID].Reason)
	s.pruneEnded(j.ID)
}

// pruneEnded drops all but the newest KeepEndedReplicas ended tasks of
// job id (oldest placement first; ties by ID).
func (s *State) pruneEnded(id structs.JobID) {
	var ended []*structs.Task
	for _, t := range s.TasksOf(id) {
		if !t.State.HoldsResources() {
			ended = append(ended, t)
		}
	}
	if len(ended) <= KeepEndedReplicas {
		return
	}
	slices.SortFunc(ended, func(a, b *structs.Task) int {
		return cmp.Or(a.ScheduledAt.Compare(b.ScheduledAt), cmp.Compare(a.ID, b.ID))
	})
	drop := map[structs.TaskID]bool{}
	for _, t := range ended[:len(ended)-KeepEndedReplicas] {
		drop[t.ID] = true
		delete(s.Tasks, t.ID)
		delete(s.Tokens, t.ID)
	}
	s.byJob[id] = slices.DeleteFunc(slices.Clone(s.byJob[id]), func(tid structs.TaskID) bool { return drop[tid] })
}
