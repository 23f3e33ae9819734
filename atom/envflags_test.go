package main_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagBeatsVariable: a flag given on the command line wins over its
// environment variable, which atom then does not read: a bad one stops
// nothing, whatever the flag's type.
func TestFlagBeatsVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		env  []string
		args []string
	}{
		"duration": {env: []string{"ATOM_HEARTBEAT=banana"}, args: []string{"--heartbeat", "5s"}},
		"zero duration": {env: []string{"ATOM_HEARTBEAT=0", "ATOM_STOP_AFTER_DISCONNECT=-1s"},
			args: []string{"--heartbeat=1s", "--stop-after-disconnect=0"}},
		"int":  {env: []string{"ATOM_REPLICA=x", "ATOM_ATTEMPT=1e3"}, args: []string{"--replica", "1", "--attempt=2"}},
		"bool": {env: []string{"ATOM_HOST_GPUS=maybe"}, args: []string{"--host-gpus=false"}},
		"string": {env: []string{"ATOM_ACCELERATORS=0,x", "ATOM_COORDINATOR=http://127.0.0.1:1"},
			args: []string{"--accelerators", "", "--coordinator="}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "ran")
			args := append(append([]string{"run"}, tc.args...), "--", "touch", marker)
			code, out := exitCode(t, atomCmd(t, tc.env, args...))
			assert.Equal(t, 0, code, out)
			assert.Empty(t, out)
			assert.FileExists(t, marker)
		})
	}
	// Another command's flags too: the cache's --timeout.
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_CACHE_TIMEOUT=banana"}, "cache", "ls", "--timeout", "1s", "--redis", "nowhere"))
	assert.Equal(t, 2, code, out)
	assert.Equal(t, "atom cache: --redis nowhere: use the cache Redis's host:port, such as 127.0.0.1:6379\n", out, "the timeout is not what is refused")
}

// TestBadVariable: a variable that is set, whose flag is not given, and
// that its flag cannot parse stops atom with one line naming the
// variable, its value, the flag and what it takes, exit code 2; a value
// out of range is refused naming the variable it came from.
func TestBadVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		env  []string
		args []string
		want string
	}{
		"duration": {env: []string{"ATOM_HEARTBEAT=banana"}, args: []string{"run"},
			want: `invalid value "banana" for $ATOM_HEARTBEAT (flag --heartbeat): a duration is a number with a unit, e.g. 5s, 10m or 1h30m (see atom run --help)`},
		"int": {env: []string{"ATOM_REPLICA=x"}, args: []string{"run"},
			want: `invalid value "x" for $ATOM_REPLICA (flag --replica): a whole number, e.g. 3 (see atom run --help)`},
		"int out of range": {env: []string{"ATOM_REPLICAS=99999999999999999999"}, args: []string{"preflight"},
			want: `invalid value "99999999999999999999" for $ATOM_REPLICAS (flag --replicas): a whole number from -9223372036854775808 to 9223372036854775807 (see atom preflight --help)`},
		"bool": {env: []string{"ATOM_SIMULATED_GPUS=maybe"}, args: []string{"gpus"},
			want: `invalid value "maybe" for $ATOM_SIMULATED_GPUS (flag --simulated-gpus): true or false (see atom gpus --help)`},
		"zero heartbeat": {env: []string{"ATOM_HEARTBEAT=0"}, args: []string{"run"},
			want: `ATOM_HEARTBEAT=0 (flag --heartbeat): use more than 0 (a duration such as 5s)`},
		"negative disconnect": {env: []string{"ATOM_STOP_AFTER_DISCONNECT=-1m"}, args: []string{"run"},
			want: `ATOM_STOP_AFTER_DISCONNECT=-1m (flag --stop-after-disconnect): use 0 (never) or more`},
		"zero heartbeat flag": {env: []string{"ATOM_HEARTBEAT=5s"}, args: []string{"run", "--heartbeat", "0"},
			want: `--heartbeat 0s: use more than 0 (a duration such as 5s)`},
		"accelerators": {env: []string{"ATOM_ACCELERATORS=0,x"}, args: []string{"preflight"},
			want: `ATOM_ACCELERATORS: "x" is not a device index: use comma-separated indices such as 0,1`},
		"accelerators flag": {env: []string{"ATOM_ACCELERATORS=0"}, args: []string{"preflight", "--accelerators", "0,x"},
			want: `--accelerators: "x" is not a device index: use comma-separated indices such as 0,1`},
		"job spec flag": {args: []string{"run", "--job-spec", "{"},
			want: `--job-spec is not valid JSON: the backend sets it to the job as accepted`},
		"coordinator flag": {args: []string{"run", "--coordinator", "http://127.0.0.1:1", "--task", "t1"},
			want: `--coordinator is set but --task or ATOM_TOKEN (or ATOM_TOKEN_FILE) is not: set both, or run standalone without --coordinator`},
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

// TestCacheFlagsRefused: atom cache refuses an address that is not
// host:port and a --timeout of 0 or less (which once meant the default
// 10s), naming the flag or the variable the value came from, with exit
// code 2 (5 for cache mount, whose failures all are), before any request.
func TestCacheFlagsRefused(t *testing.T) {
	t.Parallel()
	const timeout, redis = "use more than 0 (a duration such as 10s)", "use the cache Redis's host:port, such as 127.0.0.1:6379"
	cases := map[string]struct {
		env  []string
		args []string
		code int
		want string
	}{
		"zero timeout":     {env: []string{"ATOM_CACHE_TIMEOUT=0"}, args: []string{"ls"}, code: 2, want: "atom cache: ATOM_CACHE_TIMEOUT=0 (flag --timeout): " + timeout},
		"negative timeout": {env: []string{"ATOM_CACHE_TIMEOUT=-1s"}, args: []string{"du", "a/b"}, code: 2, want: "atom cache: ATOM_CACHE_TIMEOUT=-1s (flag --timeout): " + timeout},
		"zero timeout flag": {env: []string{"ATOM_CACHE_TIMEOUT=5s"}, args: []string{"ls", "--timeout", "0"}, code: 2,
			want: "atom cache: --timeout 0s: " + timeout},
		"mount":         {env: []string{"ATOM_CACHE_TIMEOUT=0"}, args: []string{"mount", t.TempDir()}, code: 5, want: "atom cache mount: ATOM_CACHE_TIMEOUT=0 (flag --timeout): " + timeout},
		"address":       {env: []string{"ATOM_CACHE_REDIS=redis.example"}, args: []string{"ls"}, code: 2, want: "atom cache: ATOM_CACHE_REDIS=redis.example (flag --redis): " + redis},
		"address flag":  {env: []string{"REDIS_HOST=127.0.0.1"}, args: []string{"ls", "--redis", "redis.example"}, code: 2, want: "atom cache: --redis redis.example: " + redis},
		"address first": {env: []string{"ATOM_CACHE_REDIS=x", "ATOM_CACHE_TIMEOUT=0"}, args: []string{"ls"}, code: 2, want: "atom cache: ATOM_CACHE_REDIS=x (flag --redis): " + redis},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out := exitCode(t, atomCmd(t, tc.env, append([]string{"cache"}, tc.args...)...))
			assert.Equal(t, tc.code, code, out)
			assert.Equal(t, tc.want+"\n", out)
		})
	}
}

// TestHelpDespiteBadVariable: --help shows the command's help, its
// flags' variables listed, whatever they hold.
func TestHelpDespiteBadVariable(t *testing.T) {
	t.Parallel()
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_HEARTBEAT=banana"}, "run", "--help"))
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "heartbeat period (the coordinator sets it to a third of its heartbeat TTL) (default: 5s) [$ATOM_HEARTBEAT]")
	assert.Contains(t, out, "[$ATOM_LAUNCH_ADVERTISE, $ATOM_POD_IP]")
}
