package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// The replay's usage check recomputes fair-share usage from every task
// it has seen, those the state has since removed included, and finds a
// figure the state kept wrong.
func TestUsageCheck(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := state.New()
	u := newUsageCheck()
	index := uint64(0)
	apply := func(c state.Command) any {
		t.Helper()
		index++
		res, err := s.Apply(index, c)
		require.NoError(t, err)
		require.NoError(t, u.check(s), "after %T", c)
		return res
	}
	apply(&state.NodeUpsert{Node: st.G8("n1", "A")})
	apply(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 8}}})
	apply(&state.UsageAccrue{Now: t0})
	j := st.NewJob("a", "u1").GPU("A", 4).Obj()
	j.ID = "a-1"
	apply(&state.JobSubmit{Job: j, Now: t0})
	p := sched.Schedule(s.Snapshot(), sched.Input{Pending: s.Pending(), Now: t0})
	require.Len(t, p.Placements, 1)
	p.Pending = nil
	apply(&state.PlanCommit{Plan: p, Now: t0})
	apply(&state.UsageAccrue{Now: t0.Add(time.Hour)})
	var done []structs.TaskEvent
	for _, tk := range s.TasksOf("a-1") {
		done = append(done, structs.TaskEvent{Task: tk.ID, State: structs.TaskSucceeded, Time: t0.Add(time.Hour)})
	}
	apply(&state.TaskUpdate{Events: done})
	apply(&state.JobsExpire{Before: t0.Add(2 * time.Hour)})
	require.Empty(t, s.Tasks, "the state forgot the ended task")
	apply(&state.UsageAccrue{Now: t0.Add(2 * time.Hour)})
	assert.Positive(t, s.FairUsage.Scopes["user:u1"])

	s.FairUsage.Scopes["user:u1"] += 100
	assert.ErrorContains(t, u.check(s), "fair-share usage of user:u1")
}
