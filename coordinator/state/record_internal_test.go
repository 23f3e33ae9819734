package state

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
)

// A task's event carries the task's own attempt, the first (0)
// included, even once its job has moved on; a job's event carries the
// job's current attempt.
func TestRecordKeepsTaskAttempt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New()
	s.Jobs["j-1"] = &structs.Job{ID: "j-1", Attempt: 2}
	for _, a := range []int{0, 1} {
		tk := &structs.Task{ID: structs.MakeTaskID("j-1", 0, a), Job: "j-1", Attempt: a, Node: "n1"}
		s.record(taskEventOf(now, tk, structs.EventStopped, "replica 0 stopped"))
	}
	s.jobEvent(now, "j-1", structs.EventRequeued, "pending again")
	var got []int
	for _, e := range s.Events["j-1"].Events {
		got = append(got, e.Attempt)
	}
	assert.Equal(t, []int{0, 1, 2}, got)
}
