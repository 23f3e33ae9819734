package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// Negative, non-numeric, overflowing and fractional values are refused
// at submit with the field named; no credit is left; a negative quota is
// refused and the old one kept.
func TestC10HostileQuantities(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"), st.C64("c1"))
	h.Quota(u1, structs.ResourceList{"gpu/A": 8, "cpu": 64000, "memory": 256 * st.Gi})
	cases := map[string]struct{ spec, field string }{
		"X1 negative gpu":   {"resources: {accelerators: {type: A, count: -4}}", "resources.accelerators.count"},
		"X2 negative cpu":   {"resources: {cpu: -32, memory: 8Gi}", "resources.cpu"},
		"memory 2^63 bytes": {"resources: {memory: \"9223372036854775808\"}", "resources.memory"},
		"gpu 2^32+1":        {"resources: {accelerators: {type: A, count: 4294967297}}", "resources.accelerators.count"},
		"cpu NaN":           {"resources: {cpu: .nan}", "resources.cpu"},
		"gpu 0.5":           {"resources: {accelerators: {type: A, count: 0.5}}", "resources.accelerators.count"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			spec, err := structs.ParseJobSpec([]byte("kind: command\nname: x\n" + c.spec + "\n"))
			if err == nil {
				_, err = spec.ToJob("u1")
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.field)
		})
	}
	spec, err := structs.ParseJobSpec([]byte("kind: command\nname: x3\nresources: {accelerators: {type: A, count: 12}}\n"))
	require.NoError(t, err)
	j, err := spec.ToJob("u1")
	require.NoError(t, err)
	j.ID = "x3"
	err = h.Submit(j)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "can never fit", "12 GPUs on one node never fit before quota is even asked")
	x4 := st.NewJob("x4", "u1").MPI(2).GPU("A", 6).Obj()
	require.EqualError(t, h.Submit(x4), "quota exceeded for user:u1: gpu/A quota 8, in use 0, requested 12")
	assert.Empty(t, h.Snap.Usage[u1], "no credit and no charge left over")

	_, err = structs.ParseQuotaSpec([]byte("scope: user:u2\nlimits: {gpu/A: -8}\n"))
	require.ErrorContains(t, err, "limits")
}
