package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// A duration flag given a bare number says durations need a unit, not
// just "parse error", for the app's flags and a command's alike, and
// exits as a usage error; other flags' errors are left as they are.
func TestDurationFlagWithoutUnit(t *testing.T) {
	e := apitest.NewEnv(t, "")
	_, err := run(t, e, "u1", "--timeout", "5", "job", "list")
	require.Error(t, err)
	assert.Equal(t, 2, ExitCode(err))
	assert.EqualError(t, err, `invalid value "5" for flag --timeout: a duration is a number with a unit, e.g. 5s, 10m or 1h30m (5s for 5 seconds) (see coordinator --help)`)

	_, err = run(t, e, "u1", "job", "wait", "--timeout", "1.5", "x")
	require.Error(t, err)
	assert.Equal(t, 2, ExitCode(err))
	assert.EqualError(t, err, `invalid value "1.5" for flag --timeout: a duration is a number with a unit, e.g. 5s, 10m or 1h30m (1.5s for 1.5 seconds) (see coordinator job wait --help)`)

	_, err = run(t, e, "u1", "job", "list", "--interval", "soon")
	require.Error(t, err)
	assert.EqualError(t, err, `invalid value "soon" for flag --interval: a duration is a number with a unit, e.g. 5s, 10m or 1h30m (see coordinator job list --help)`)
}

// A duration flag's environment variable that is not a duration names the
// variable and the flag, not Go's parser's words, and exits as a usage
// error.
func TestDurationEnvWithoutUnit(t *testing.T) {
	e := apitest.NewEnv(t, "")
	t.Setenv("ATOM_TIMEOUT", "5")
	_, err := run(t, e, "u1", "job", "list")
	require.Error(t, err)
	assert.Equal(t, 2, ExitCode(err))
	assert.EqualError(t, err, `invalid value "5" for $ATOM_TIMEOUT (flag --timeout): a duration is a number with a unit, e.g. 5s, 10m or 1h30m (5s for 5 seconds) (see coordinator --help)`)
}

// A flag the command does not have is named as typed, with the flag it
// looks like, for the app's flags and a command's, as a usage error.
func TestUnknownFlagSaysWhichWasMeant(t *testing.T) {
	e := apitest.NewEnv(t, "")
	for args, want := range map[string]string{
		"--adress x job list":    "unknown flag --adress: did you mean --addr? (see coordinator --help)",
		"job list --outptu json": "unknown flag --outptu: did you mean --output? (see coordinator job list --help)",
		"job submit --banana x":  "unknown flag --banana (see coordinator job submit --help)",
		"job cancel -z x":        "unknown flag -z (see coordinator job cancel --help)",
	} {
		_, err := run(t, e, "u1", strings.Fields(args)...)
		require.EqualError(t, err, want, args)
		assert.Equal(t, 2, ExitCode(err), args)
	}
}
