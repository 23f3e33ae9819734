package main_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBadDuration: a duration flag, or its environment variable, given
// something that is not a duration is one line naming the flag (and the
// variable), the value and what a duration looks like; atom exits 2, the
// usage error, and runs nothing.
func TestBadDuration(t *testing.T) {
	t.Parallel()
	const hint = "a duration is a number with a unit, e.g. 5s, 10m or 1h30m"
	cases := map[string]struct {
		env  []string
		args []string
		want string
	}{
		"grace": {args: []string{"run", "--grace", "5x"},
			want: `invalid value "5x" for flag --grace: ` + hint + ` (see atom run --help)`},
		"bare number": {args: []string{"run", "--report-timeout=30"},
			want: `invalid value "30" for flag --report-timeout: ` + hint + ` (30s for 30 seconds) (see atom run --help)`},
		"heartbeat variable": {env: []string{"ATOM_HEARTBEAT=5x"}, args: []string{"run"},
			want: `invalid value "5x" for $ATOM_HEARTBEAT (flag --heartbeat): ` + hint + ` (see atom run --help)`},
		"disconnect variable": {env: []string{"ATOM_STOP_AFTER_DISCONNECT=soon"}, args: []string{"run"},
			want: `invalid value "soon" for $ATOM_STOP_AFTER_DISCONNECT (flag --stop-after-disconnect): ` + hint + ` (see atom run --help)`},
		"cache timeout": {args: []string{"cache", "ls", "--timeout", "1.5"},
			want: `invalid value "1.5" for flag --timeout: ` + hint + ` (1.5s for 1.5 seconds) (see atom cache ls --help)`},
		"cache timeout variable": {env: []string{"ATOM_CACHE_TIMEOUT=3"}, args: []string{"cache", "ls"},
			want: `invalid value "3" for $ATOM_CACHE_TIMEOUT (flag --timeout): ` + hint + ` (3s for 3 seconds) (see atom cache ls --help)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "ran")
			args := tc.args
			if args[0] == "run" {
				args = append(args, "--", "touch", marker)
			}
			code, out := exitCode(t, atomCmd(t, tc.env, args...))
			assert.Equal(t, 2, code, out)
			assert.Equal(t, "atom: "+tc.want+"\n", out)
			assert.NoFileExists(t, marker)
		})
	}
}
