package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// quota set -f FILE --weight W reads the file as the coordinator reads a
// spec, changing only its weight: it went through YAML 1.1, so limits:
// {cpu: 010} set 8 cores (10 without --weight) and gpu: 0x10 set 16 GPUs
// (refused without --weight).
func TestQuotaSetWeightReadsTheSpecAsWritten(t *testing.T) {
	e := apitest.NewEnv(t, "")
	f := file(t, "# u2's quota\nscope: user:u2\nlimits: {cpu: 010, memory: 1Gi}\nweight: 1\n---\n")
	assert.Equal(t, "quota for user:u2 set: cpu=10 memory=1Gi; removed (a key not listed is 0): gpu/A100\n", must(t, e, "admin", "quota", "set", "-f", f, "--weight", "2.5"))
	assert.Contains(t, must(t, e, "admin", "quota", "get", "-o", "json", "user:u2"), `"weight": 2.5`)

	hex := file(t, `{"scope": "user:u2", "limits": {"gpu": 0x10}}`)
	_, err := run(t, e, "admin", "quota", "set", "-f", hex, "--weight", "2")
	require.EqualError(t, err, "set "+hex+`: limits["gpu"] "0x10" is not allowed: use a quantity such as 8`)
	_, err = run(t, e, "admin", "quota", "set", "-f", f, "--weight", "NaN")
	require.EqualError(t, err, "--weight NaN is not allowed: use a number above 0 and at most 1e+06 (default 1)")
	assert.Contains(t, must(t, e, "admin", "quota", "get", "-o", "json", "user:u2"), `"weight": 2.5`)
}
