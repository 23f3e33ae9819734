package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A project job accepted over its project's public quota runs only in the
// project's pool; while it waits there, its reason names the quota that
// keeps it out of the public pool (scope, key, in use, limit, in cores),
// not just "pools this job may not use".
func TestPoolOnlyJobWhyNamesTheQuota(t *testing.T) {
	p1 := st.CPUNode("p1", 40, 256)
	p1.Pool = "vision"
	h := st.New(t, st.CPUNode("c1", 128, 1024), p1)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1"}})
	h.Quota(structs.ProjectScope("vision"), structs.ResourceList{structs.KeyCPU: 64_000, structs.KeyMemory: 1024 * st.Gi})
	big := st.NewJob("big", "u1").Project("vision").CPU(40, 8).Obj()
	big.Resources.MilliCPU = 41_500
	h.MustSubmit(big)
	h.MustSubmit(st.NewJob("hold", "u1").Project("vision").High().CPU(40, 8).Obj())
	h.Cycle()
	require.Equal(t, []string{"c1"}, h.NodesOf("big"))
	require.Equal(t, []string{"p1"}, h.NodesOf("hold"))

	h.MustSubmit(st.NewJob("over", "u1").Project("vision").CPU(32, 8).Obj())
	require.True(t, h.Job("over").PoolOnly)
	h.Cycle()
	assert.Empty(t, h.Tasks("over"))
	why := h.Why("over")
	require.NotNil(t, why)
	require.NotNil(t, why.Quota)
	assert.Equal(t, structs.KeyCPU, why.Quota.Key)
	assert.Equal(t, "does not fit now: over public quota, so only the project's pool may be used; "+
		"quota exceeded for project:vision: cpu quota 64, in use 41.5, requested 32; "+
		"0/2 nodes fit: 1 in the public pool, which its project's public quota keeps it from, 1 without enough free resources now", why.Message)
}
