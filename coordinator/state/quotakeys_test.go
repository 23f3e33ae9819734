package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestQuotaKeysNameKnownTypes: a quota on an accelerator type that a
// node's type matches only when case is ignored would count for nothing,
// so it is refused, naming the type meant; a type no node has yet is
// accepted (a Kubernetes cluster's nodes join after its config's quotas).
func TestQuotaKeysNameKnownTypes(t *testing.T) {
	l := newLogged(t)
	h100 := &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/H100": 4}}
	l.must(&state.QuotaSet{Quota: h100})
	assert.Equal(t, structs.ResourceList{"gpu/H100": 4}, l.s.Quotas["user:u1"], "before any node")

	l.must(&state.NodeUpsert{Node: st.G8("g1", "A100")})
	_, err := l.do(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/a100": 16}}})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.EqualError(t, err, `quota user:u1: limits[gpu/a100]: unknown accelerator type "a100": this cluster has A100; did you mean gpu/A100? (types are case-sensitive)`)
	assert.Equal(t, structs.ResourceList{"gpu/H100": 4}, l.s.Quotas["user:u1"], "nothing changed")

	l.must(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A100": 16, "device/jetson": 1}}})
	assert.Equal(t, structs.ResourceList{"gpu/A100": 16, "device/jetson": 1}, l.s.Quotas["user:u1"])
}
