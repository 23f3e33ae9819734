package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// usageOf returns s's fair-share usage, checked against the usage
// recomputed from its tasks.
func usageOf(t *testing.T, s *server.Server) sched.Usage {
	t.Helper()
	var u, want sched.Usage
	s.Read(func(st *state.State) {
		u = st.FairUsage.Clone()
		var tasks []*structs.Task
		for _, t := range st.Tasks {
			tasks = append(tasks, t)
		}
		want = sched.RecomputeUsage(st.FairShare, u.Since, u.At, tasks,
			func(id structs.JobID) *structs.Job { return st.Jobs[id] },
			func(structs.PoolID) structs.ProjectID { return "" })
	})
	require.NoError(t, sched.CheckUsage(u, want))
	return u
}

// Fair-share usage is replicated state: the new leader carries on from
// where the old one left it, and a server restarted from its data dir has
// it too.
func TestUsageSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.UsageEvery = 20 * time.Millisecond })
	c.seed(st.G8("n1", "A"))
	j := st.NewJob("train", "u1").GPU("A", 4).Obj()
	j.ID = "train-1"
	c.apply(&state.JobSubmit{Job: j, Now: time.Now()})

	old := c.leader()
	var before sched.Usage
	require.Eventually(t, func() bool {
		before = usageOf(t, old)
		return before.Scopes["user:u1"] > 4 // more than a GPU-second on 4 GPUs
	}, waitFor, tick, "no usage accrued")
	down := c.index(old)
	c.stop(down)

	l := c.leader()
	require.NotEqual(t, old, l)
	require.Eventually(t, func() bool {
		u := usageOf(t, l)
		return u.At.After(before.At) && u.Scopes["user:u1"] > before.Scopes["user:u1"]
	}, waitFor, tick, "the new leader does not accrue on the old one's usage")
	assert.Equal(t, before.Since, usageOf(t, l).Since, "counting did not start over")

	r := c.restart(down)
	require.Eventually(t, func() bool {
		return usageOf(t, r).At.After(before.At)
	}, waitFor, tick, "the restarted server has no usage")
	assert.Equal(t, before.Since, usageOf(t, r).Since)
}
