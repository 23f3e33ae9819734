package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// TestFlagBeatsVariable: a flag given on the command line wins over its
// environment variable, which coordinator then does not read: a bad one
// stops nothing.
func TestFlagBeatsVariable(t *testing.T) {
	e := apitest.NewEnv(t, "")
	flags := []string{"--addr", e.URL(), "--token", e.Tokens["u1"], "--timeout", "5s", "--tls-ca="}
	for name, bad := range map[string]string{
		"duration": "ATOM_TIMEOUT=banana",
		"negative": "ATOM_TIMEOUT=-5s",
		"address":  "ATOM_ADDR=http://a:7071,http://b:7072",
		"token":    "ATOM_TOKEN=nobody's",
		"CA file":  "ATOM_TLS_CA=/nonexistent/ca.pem",
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := coordinator(t, []string{bad}, append(flags, "-o", "json", "job", "list")...)
			assert.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			assert.JSONEq(t, `{"jobs": []}`, stdout)
		})
	}
}

// TestBadVariable: a variable that is set, whose flag is not given, and
// that is not allowed stops the command with one line naming the
// variable, its value and what is allowed, exit code 2, before any
// request; the same value given as the flag names the flag.
func TestBadVariable(t *testing.T) {
	const hint = "a duration is a number with a unit, e.g. 5s, 10m or 1h30m"
	cases := map[string]struct {
		env  []string
		args []string
		want string
	}{
		"duration": {env: []string{"ATOM_TIMEOUT=banana"}, args: []string{"job", "list"},
			want: `invalid value "banana" for $ATOM_TIMEOUT (flag --timeout): ` + hint + ` (see coordinator --help)`},
		"bare number": {env: []string{"ATOM_TIMEOUT=5"}, args: []string{"quota", "list"},
			want: `invalid value "5" for $ATOM_TIMEOUT (flag --timeout): ` + hint + ` (5s for 5 seconds) (see coordinator --help)`},
		"negative": {env: []string{"ATOM_TIMEOUT=-5s"}, args: []string{"job", "list"},
			want: `ATOM_TIMEOUT=-5s (flag --timeout): use 0 (no limit) or more, a duration such as 30s`},
		"negative flag": {env: []string{"ATOM_TIMEOUT=5s"}, args: []string{"--timeout=-5s", "job", "list"},
			want: `--timeout -5s: use 0 (no limit) or more, a duration such as 30s`},
		"address": {env: []string{"ATOM_ADDR=http://a:7071/v1"}, args: []string{"job", "list"},
			want: `ATOM_ADDR "http://a:7071/v1" is not allowed (it has more than scheme, host and port): give one coordinator's URL, such as http://127.0.0.1:7070 (https:// with TLS); any server of a cluster answers`},
		"address flag": {env: []string{"ATOM_ADDR=http://127.0.0.1:7070"}, args: []string{"--addr", "ftp://a:7071", "job", "list"},
			want: `--addr "ftp://a:7071" is not allowed (the scheme is "ftp"): give one coordinator's URL, such as http://127.0.0.1:7070 (https:// with TLS); any server of a cluster answers`},
		"CA file": {env: []string{"ATOM_TLS_CA=/nonexistent/ca.pem"}, args: []string{"job", "list"},
			want: `ATOM_TLS_CA: read TLS CA: open /nonexistent/ca.pem: no such file or directory`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := coordinator(t, tc.env, tc.args...)
			assert.Equal(t, 2, code, stderr)
			assert.Equal(t, "coordinator: "+tc.want+"\n", stderr)
			assert.Empty(t, stdout)
		})
	}
}

// TestVariableOfServer: a variable of a command's flag is named when its
// value is refused; the commands that run a coordinator do not read the
// client's --timeout, so a negative ATOM_TIMEOUT does not stop them.
func TestVariableOfServer(t *testing.T) {
	env := []string{"ATOM_KEYRING=/nonexistent/keyring.yaml", "ATOM_TIMEOUT=-5s"}
	code, stdout, stderr := coordinator(t, env, "dev", "--data-dir", t.TempDir())
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, "coordinator: ATOM_KEYRING: load keyring: open /nonexistent/keyring.yaml: no such file or directory\n", stderr)
	assert.Empty(t, stdout)
}

// TestHelpDespiteBadVariable: --help shows the app's help, its flags'
// variables listed, whatever they hold.
func TestHelpDespiteBadVariable(t *testing.T) {
	code, stdout, stderr := coordinator(t, []string{"ATOM_TIMEOUT=banana", "ATOM_ADDR=nowhere:x"}, "--help")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "(default: 30s) [$ATOM_TIMEOUT]")
	assert.Contains(t, stdout, `(default: "http://127.0.0.1:7070") [$ATOM_ADDR]`)

	// A command's help too: the app's variables are read before the
	// command's, and used to stop it.
	for _, tc := range []struct{ args, want string }{
		{"job list --help", "coordinator job list - list the jobs"},
		{"help job", "coordinator job - submit, list"},
		{"job wait -h", "coordinator job wait - wait until"},
	} {
		code, stdout, stderr := coordinator(t, []string{"ATOM_TIMEOUT=banana", "ATOM_ADDR=nowhere:x"}, strings.Fields(tc.args)...)
		assert.Equal(t, 0, code, "%s: %s", tc.args, stderr)
		assert.Contains(t, stdout, tc.want, tc.args)
	}
}
