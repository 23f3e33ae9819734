package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPreemptNoticeSpec(t *testing.T) {
	for spec, want := range map[string]string{
		`{signal: SIGKILL, seconds: 60}`: `preemptNotice.signal "SIGKILL" is not allowed: use one of SIGUSR1, SIGUSR2, SIGINT, SIGHUP, SIGQUIT, or leave it out for the notice file only`,
		`{signal: SIGUSR1}`:              `preemptNotice.seconds 0 is not allowed: use 1 to 3600 seconds`,
		`{seconds: 7200}`:                `preemptNotice.seconds 7200 is not allowed: use 1 to 3600 seconds`,
	} {
		_, err := parseJob("kind: command\nname: n\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\npreemptNotice: " + spec + "\n")
		require.Error(t, err, spec)
		assert.Equal(t, want, err.Error(), spec)
	}
	j, err := parseJob("kind: command\nname: n\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\npreemptNotice: {signal: SIGUSR1, seconds: 60}\n")
	require.NoError(t, err)
	assert.Equal(t, &PreemptNotice{Signal: "SIGUSR1", Seconds: 60}, j.PreemptNotice)
}

func parseJob(y string) (*Job, error) {
	s, err := ParseJobSpec([]byte(y))
	if err != nil {
		return nil, err
	}
	return s.ToJob("u")
}
