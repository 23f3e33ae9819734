package sched

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// ScaleDownPlan says which replicas of service j stop when it is scaled
// from j.Replicas to replicas, given its live tasks: pending replicas go
// first (they hold no node), then failed or crash-looping ones, then
// starting ones, then running ones, newest first.
// Survivors whose index is now out of range take the freed indices, so the
// service's replica indices stay 0..replicas-1.
type ScaleDownPlan struct {
	Stop    []structs.TaskID
	Reindex map[structs.TaskID]int // survivor -> new replica index
}

// ScaleDown plans scaling j down to replicas. A service runs with at
// least minAvailable replicas or none: 0 parks it (every replica stops,
// the spec stays), and a count from 1 to minAvailable-1 is refused.
func ScaleDown(j *structs.Job, live []*structs.Task, replicas int) (ScaleDownPlan, error) {
	var p ScaleDownPlan
	if replicas < 0 {
		return p, fmt.Errorf("replicas %d is not allowed: scale to 0 (park the service) or more (cancel the job to end it)", replicas)
	}
	if replicas > 0 && replicas < j.MinAvailable {
		return p, fmt.Errorf("replicas %d is below minAvailable %d: scale to %d or more, or to 0 to park the service", replicas, j.MinAvailable, j.MinAvailable)
	}
	current := j.ShapeAt(j.Shape).Replicas // the shape it runs with
	if replicas >= current {
		return p, nil
	}
	// Stopping tasks are already going; they are not replicas any more.
	tasks := slices.DeleteFunc(slices.Clone(live), func(t *structs.Task) bool { return t.State == structs.TaskStopping })
	// Pending replicas are those without a task; they go first.
	drop := current - replicas - (current - len(tasks))
	if drop <= 0 {
		// Only pending replicas go; survivors may still need new indices.
		return reindex(p, tasks, nil, replicas), nil
	}
	rank := func(t *structs.Task) int {
		switch {
		case t.State == structs.TaskFailed || t.State == structs.TaskLost || (t.Restarts > 0 && !t.Healthy):
			return 0
		case t.State == structs.TaskScheduled || (t.State == structs.TaskRunning && !t.Healthy && j.Kind == structs.KindService):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(tasks, func(a, b *structs.Task) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if c := placedAt(b).Compare(placedAt(a)); c != 0 {
			return c // newest first
		}
		return cmp.Compare(b.Index, a.Index)
	})
	stopped := map[structs.TaskID]bool{}
	for _, t := range tasks[:drop] {
		p.Stop = append(p.Stop, t.ID)
		stopped[t.ID] = true
	}
	return reindex(p, tasks, stopped, replicas), nil
}

// reindex gives survivors with index >= replicas the free indices below it.
func reindex(p ScaleDownPlan, tasks []*structs.Task, stopped map[structs.TaskID]bool, replicas int) ScaleDownPlan {
	taken := make([]bool, replicas)
	var out []*structs.Task
	for _, t := range tasks {
		if stopped[t.ID] {
			continue
		}
		if t.Index < replicas {
			taken[t.Index] = true
		} else {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Task) int { return cmp.Compare(a.Index, b.Index) })
	free := 0
	for _, t := range out {
		for free < replicas && taken[free] {
			free++
		}
		if free == replicas {
			break
		}
		if p.Reindex == nil {
			p.Reindex = map[structs.TaskID]int{}
		}
		p.Reindex[t.ID] = free
		taken[free] = true
	}
	return p
}

// placedAt is when a task was placed (its start if that was not recorded).
func placedAt(t *structs.Task) time.Time {
	if !t.ScheduledAt.IsZero() {
		return t.ScheduledAt
	}
	return t.StartedAt
}
