package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bare number is bytes wherever memory is written: job specs, their
// fallbacks, node specs and quota limits refuse "memory: 16" alike.
func TestBareMemoryRefusedEverywhere(t *testing.T) {
	t.Parallel()
	const said = "memory 16 is too small: memory is in bytes unless it has a unit; did you mean 16Mi?"
	cases := []struct {
		name  string
		parse func() error
		field string
	}{
		{"job", func() error {
			_, err := ParseJobSpec([]byte("kind: command\nname: x\nresources: {memory: 16}"))
			return err
		}, "resources."},
		{"job fallback", func() error {
			_, err := ParseJobSpec([]byte("kind: command\nname: x\nresources: {accelerators: {type: A, count: 2}}\nfallbacks: [{accelerators: {type: A, count: 1}, memory: 16}]"))
			return err
		}, "fallbacks[0]."},
		{"node", func() error {
			_, err := ParseNodeSpec([]byte("name: n1\ncpu: 4\nmemory: 16"))
			return err
		}, ""},
		{"quota", func() error {
			_, err := ParseQuotaSpec([]byte("scope: user:u1\nlimits: {memory: 16}"))
			return err
		}, `limits["`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.parse()
			require.Error(t, err)
			assert.Contains(t, err.Error(), said[len("memory"):])
			assert.Contains(t, err.Error(), tc.field+"memory")
		})
	}
	// A unit, or 0 in a quota (no memory), is accepted.
	_, err := ParseNodeSpec([]byte("name: n1\ncpu: 4\nmemory: 16Gi"))
	require.NoError(t, err)
	q, err := ParseQuotaSpec([]byte("scope: user:u1\nlimits: {memory: 0}"))
	require.NoError(t, err)
	assert.Equal(t, int64(0), q.Limits[KeyMemory])
}
