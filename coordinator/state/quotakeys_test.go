package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestQuotaKeysNameKnownTypes: a quota on an accelerator type no node
// has would count for nothing, so it is refused as a job asking for that
// type is, suggesting the type differing only in case; once a node of
// the type is in (as a cluster config's nodes are, before its quotas) it
// is accepted.
func TestQuotaKeysNameKnownTypes(t *testing.T) {
	l := newLogged(t)
	l.must(&state.NodeUpsert{Node: st.G8("g1", "A100")})
	h100 := &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/H100": 4}}
	_, err := l.do(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/a100": 16}}})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.EqualError(t, err, `quota user:u1: limits[gpu/a100]: unknown accelerator type "a100": this cluster has A100; did you mean gpu/A100?`)
	_, err = l.do(&state.QuotaSet{Quota: h100})
	assert.EqualError(t, err, `quota user:u1: limits[gpu/H100]: unknown accelerator type "H100": this cluster has A100`)
	assert.Empty(t, l.s.Quotas["user:u1"], "nothing changed")

	l.must(&state.NodeUpsert{Node: st.G8("g2", "H100")})
	l.must(&state.QuotaSet{Quota: h100})
	assert.Equal(t, structs.ResourceList{"gpu/H100": 4}, l.s.Quotas["user:u1"])
}
