package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A gang that would fit were its replicas spread over pools, but fits in
// no one pool, is told that a gang stays in one pool and how many of its
// replicas each pool has room for now.
func TestWhyGangStaysInOnePool(t *testing.T) {
	p1, p2 := st.G8("p1", "A"), st.G8("p2", "A")
	p1.Pool, p2.Pool = "vision", "vision"
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), p1, p2)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u1", "u2"}})
	h.Quota(rvU1, rvGPU("A", 16))
	h.Quota(rvU2, rvGPU("A", 8))
	h.Quota(rvVision, rvGPU("A", 16))
	h.MustSubmit(st.NewJob("hog", "u2").GPU("A", 8).Node("n2").Obj())
	h.MustSubmit(st.NewJob("vhog", "u2").Project("vision").GPU("A", 8).Node("p2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("g", "u1").Project("vision").MPI(2).GPU("A", 8).Obj())
	h.Cycle()
	why := h.Why("g")
	require.NotNil(t, why)
	assert.Equal(t, "does not fit now; gang needs 2 replicas: 1 fit now, at most 2 on empty nodes; 2/4 nodes fit: 2 without enough free resources now; "+
		"a gang's replicas stay in one pool: public has room for 1 now, vision 1", why.Message)
	assert.Equal(t, []string{"a gang's replicas stay in one pool: public has room for 1 now, vision 1"}, why.Notes)

	// In two clusters: the pools are named with their cluster.
	a1, a2, b1, b2 := st.G8("a1", "A"), st.G8("a2", "A"), st.G8("b1", "A"), st.G8("b2", "A")
	a1.Cluster, a2.Cluster, b1.Cluster, b2.Cluster = "ca", "ca", "cb", "cb"
	h = st.New(t, a1, a2, b1, b2)
	h.Quota(rvU1, rvGPU("A", 16))
	h.Quota(rvU2, rvGPU("A", 16))
	h.MustSubmit(st.NewJob("hoga", "u2").GPU("A", 8).Node("a2").Obj())
	h.MustSubmit(st.NewJob("hogb", "u2").GPU("A", 8).Node("b2").Obj())
	h.Cycle()
	h.MustSubmit(st.NewJob("g", "u1").MPI(2).GPU("A", 8).Obj())
	h.Cycle()
	why = h.Why("g")
	require.NotNil(t, why)
	assert.Equal(t, []string{"a gang's replicas stay in one pool of one cluster: ca/public has room for 1 now, cb/public 1"}, why.Notes)
}
