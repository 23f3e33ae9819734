package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

func TestSplitPlan(t *testing.T) {
	placement := func(job string, tasks int) sched.Placement {
		p := sched.Placement{Job: structs.JobID(job)}
		for i := range tasks {
			p.Tasks = append(p.Tasks, sched.TaskPlacement{Index: i, Node: "n"})
		}
		return p
	}
	res := []sched.Reservation{{Job: "waiting", Node: "n", Kind: sched.ReserveGang}}
	pre := []sched.Preemption{{Victim: "low", Preemptor: "waiting"}}
	to := []sched.Timeout{{Job: "old", Reason: structs.ReasonPendingTimeout}}

	cases := map[string]struct {
		sizes []int // tasks per placement
		want  [][]string
	}{
		"empty plan":      {sizes: nil, want: [][]string{nil}},
		"fits one":        {sizes: []int{1, 2, 1}, want: [][]string{{"j0", "j1", "j2"}}},
		"exactly full":    {sizes: []int{2, 2}, want: [][]string{{"j0", "j1"}}},
		"cut between":     {sizes: []int{3, 2, 1}, want: [][]string{{"j0"}, {"j1", "j2"}}},
		"big gang alone":  {sizes: []int{1, 9, 1}, want: [][]string{{"j0"}, {"j1"}, {"j2"}}},
		"many small ones": {sizes: []int{1, 1, 1, 1, 1}, want: [][]string{{"j0", "j1", "j2", "j3"}, {"j4"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := &sched.Plan{Index: 7, Reservations: res, Preemptions: pre, Timeouts: to}
			for i, n := range tc.sizes {
				plan.Placements = append(plan.Placements, placement(fmt.Sprintf("j%d", i), n))
			}
			chunks := splitPlan(plan, 4)
			require.Len(t, chunks, len(tc.want))
			for i, c := range chunks {
				var got []string
				for _, p := range c.Placements {
					got = append(got, string(p.Job))
				}
				assert.Equal(t, tc.want[i], got, "chunk %d", i)
				assert.Equal(t, uint64(7), c.Index)
				assert.Equal(t, res, c.Reservations, "every chunk keeps the whole reservation set")
				if i == len(chunks)-1 {
					assert.Equal(t, pre, c.Preemptions)
					assert.Equal(t, to, c.Timeouts)
				} else {
					assert.Empty(t, c.Preemptions, "preemptions come after every placement")
					assert.Empty(t, c.Timeouts)
				}
			}
		})
	}
}

func TestNewTokensFollowTaskIDs(t *testing.T) {
	snap := &sched.Snapshot{Jobs: map[structs.JobID]*structs.Job{"a": {ID: "a", Attempt: 2}, "b": {ID: "b"}}}
	plan := &sched.Plan{Placements: []sched.Placement{
		{Job: "a", Tasks: []sched.TaskPlacement{{Index: 0}, {Index: 1}}},
		{Job: "b", Tasks: []sched.TaskPlacement{{Index: 0}}},
	}}
	tokens, err := newTokens(plan, snap)
	require.NoError(t, err)
	require.Len(t, tokens, 3)
	seen := map[string]bool{}
	var ids []structs.TaskID
	for _, pl := range plan.Placements {
		for _, tp := range pl.Tasks {
			assert.Regexp(t, "^"+string(pl.Job)+"-"+fmt.Sprint(tp.Index)+"-[0-9a-f]{4}$", string(tp.ID))
			ids = append(ids, tp.ID)
		}
	}
	for _, id := range ids {
		tok := tokens[id]
		assert.Len(t, tok, 32, id)
		assert.False(t, seen[tok], "tokens are unique")
		seen[tok] = true
	}
	none, err := newTokens(&sched.Plan{}, snap)
	require.NoError(t, err)
	assert.Nil(t, none)
}
