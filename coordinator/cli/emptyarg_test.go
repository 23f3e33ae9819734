package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// An empty argument, as an unset "$ID" gives, is a usage error naming
// the argument, for every command taking one, before any request: sent
// on, it named no object and got a puzzling answer (job why with an
// empty ID said "job why not found", job cancel "method POST is not
// allowed").
func TestEmptyArgumentRefused(t *testing.T) {
	e := apitest.NewEnv(t, "")
	for _, line := range []string{
		"job status ID", "job why ID", "job cancel ID", "job logs ID", "job wait --for running ID", "job events ID",
		"service scale ID 2", "service scale web-00001 REPLICAS", "service restart ID",
		"quota get SCOPE", "pool delete NAME", "node delete NAME", "node release NAME", "cluster get NAME", "cluster delete NAME",
		"config get NAME", "config create NAME", "config update NAME", "config delete NAME",
		"secret get NAME", "secret delete NAME", "volume create NAME", "volume delete NAME",
		"completion bash|zsh|fish",
	} {
		words := strings.Fields(line)
		name := words[len(words)-1]
		if line == "service scale ID 2" {
			name = "ID"
		}
		for i, w := range words {
			if w == name {
				words[i] = ""
			}
		}
		_, err := run(t, e, "admin", words...)
		require.Error(t, err, line)
		var ue usageError
		require.ErrorAs(t, err, &ue, line)
		assert.Contains(t, err.Error(), ": "+name+" is empty: give one (an unset shell variable, such as \"$", line)
	}
	_, err := run(t, e, "u1", "job", "why", "")
	assert.EqualError(t, err, `usage: coordinator job why ID: ID is empty: give one (an unset shell variable, such as "$ID", gives an empty argument)`)
}
