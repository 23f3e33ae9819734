package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// noRequests is a coordinator that must not be asked anything, and the
// command line pointed at it.
func noRequests(t *testing.T) (runAt func(args ...string) error, requests *atomic.Int32) {
	requests = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "no request was expected", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return func(args ...string) error {
		app := App()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		return app.RunContext(context.Background(), append([]string{"coordinator", "--addr", srv.URL, "--token", "t"}, args...))
	}, requests
}

// A -f file that does not exist, or is a directory, is a usage error
// (exit 2) as an empty one is, naming the file and what to give, before
// any request: it was "read spec: open FILE: no such file or directory",
// exit 1.
func TestSpecFileUnreadable(t *testing.T) {
	runAt, requests := noRequests(t)
	missing := filepath.Join(t.TempDir(), "train.yaml")
	dir := t.TempDir()
	for _, c := range []struct{ args, what string }{
		{"job submit", "job spec"},
		{"quota set", "quota spec"},
		{"quota set --weight 2", "quota spec"},
		{"pool set", "pool spec"},
		{"node set", "node spec"},
		{"cluster set", "cluster spec"},
	} {
		instead := ": give the path of a file that holds the " + c.what + ", or - to read it from standard input"
		err := runAt(append(strings.Fields(c.args), "-f", missing)...)
		require.EqualError(t, err, "spec file "+missing+" does not exist"+instead, c.args)
		assert.Equal(t, 2, ExitCode(err), c.args)
		err = runAt(append(strings.Fields(c.args), "-f", dir)...)
		require.EqualError(t, err, "spec file "+dir+" is a directory"+instead, c.args)
		assert.Equal(t, 2, ExitCode(err), c.args)
	}

	// One over the size a spec may have is read no further than that,
	// and refused alike: it was sent whole, to be refused by the
	// coordinator.
	big := file(t, "name: a\n"+strings.Repeat("#", structs.MaxSpecBytes))
	err := runAt("node", "set", "-f", big)
	require.EqualError(t, err, "spec file "+big+" is over 1048576 bytes: a node spec is at most 1048576 bytes (1 MiB)")
	assert.Equal(t, 2, ExitCode(err))
	assert.Zero(t, requests.Load(), "no request was made")
}

// quota set --weight refuses a weight the coordinator would refuse alike
// with -f and without, as a usage error, before any request: without -f,
// NaN and ±Inf failed as "json: unsupported value: NaN" (exit 1); with
// -f, "weight NaN is not allowed: use a finite number"; 0, -1 and 1e7
// went to the coordinator.
func TestQuotaSetWeightRefusedAlike(t *testing.T) {
	runAt, requests := noRequests(t)
	spec := file(t, "scope: user:u2\nlimits: {cpu: 4}\n")
	for w, shown := range map[string]string{"NaN": "NaN", "Inf": "+Inf", "-Inf": "-Inf", "-1": "-1", "0": "0", "1e7": "1e+07", "1000000.5": "1.0000005e+06"} {
		want := "--weight " + shown + " is not allowed: use a number above 0 and at most 1e+06 (default 1)"
		for _, args := range [][]string{{"--weight", w, "user:u2"}, {"-f", spec, "--weight", w}} {
			err := runAt(append([]string{"quota", "set"}, args...)...)
			require.EqualError(t, err, want, "%v", args)
			assert.Equal(t, 2, ExitCode(err), "%v", args)
		}
	}
	assert.Zero(t, requests.Load(), "no request was made")

	e := apitest.NewEnv(t, "")
	assert.Equal(t, "quota for user:u2 set: cpu=4; removed (a key not listed is 0): gpu/A100, memory\n", must(t, e, "admin", "quota", "set", "-f", spec, "--weight", "1e6"))
	assert.Equal(t, "quota for user:u2 set: cpu=4\n", must(t, e, "admin", "quota", "set", "--weight", "0.001", "user:u2"))
	assert.Contains(t, must(t, e, "admin", "quota", "get", "-o", "json", "user:u2"), `"weight": 0.001`)
}

// What the coordinator refuses in a spec file, quota, pool, node and
// cluster set say naming the file, as job submit does ("submit FILE:");
// they said it without.
func TestSetNamesTheSpecFile(t *testing.T) {
	e := apitest.NewEnv(t, "")
	for _, tc := range []struct{ cmd, spec, want string }{
		{"quota", "scope: user:u2\nlimits: {cpu: 4x}\n", `limits["cpu"] "4x" is not allowed: use a quantity such as 500m or 4`},
		{"pool", "name: vision\nproject: vision\nbogus: 1\n", "bogus is not a known field: use name, project, members, lendIdle, maxPreemptNotice, minRuntime"},
		{"node", "name: n9\ncpu: 4x\n", `cpu "4x" is not allowed: use a quantity such as 500m or 4`},
		{"cluster", "name: local\nbackend: nope\n", `backend "nope" is not allowed: use local or kubernetes`},
		{"cluster", "name: local\nbackend: local\n\t\n---\nname: b\n", "cluster spec holds several YAML documents (a second starts at line 4): the spec must be a single document"},
	} {
		f := file(t, tc.spec)
		_, err := run(t, e, "admin", tc.cmd, "set", "-f", f)
		require.EqualError(t, err, "set "+f+": "+tc.want, tc.cmd)
		assert.Equal(t, 1, ExitCode(err), tc.cmd)
	}

	// --weight with -f: the file is named whether the command line or the
	// coordinator refuses what it holds.
	f := file(t, "scope: user:u2\nlimits: {cpu: [4}\n")
	_, err := run(t, e, "admin", "quota", "set", "-f", f, "--weight", "2")
	require.EqualError(t, err, "set "+f+": parse quota spec: yaml: line 1: did not find expected ',' or ']'")
	assert.Equal(t, 1, ExitCode(err))

	// Without a file there is none to name.
	_, err = run(t, e, "u1", "quota", "set", "--weight", "2", "user:u2")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "set ")
}

// A spec with lines of only tabs, as editors leave, and one that starts
// with a %YAML 1.2 directive are taken: both are YAML 1.2. A line of
// spaces and a tab in a block scalar, which may be text, is refused,
// naming it, when the spec does not parse as written.
func TestSpecFileTabsAndDirective(t *testing.T) {
	e := apitest.NewEnv(t, "")
	out := must(t, e, "u1", "job", "submit", "-f", file(t, "kind: command\nname: tabs\n\t\ncommand: [run]\nresources: {cpu: 1, memory: 1Gi}\n\t\t\n"))
	assert.Contains(t, out, "job tabs-00001 submitted")
	out = must(t, e, "u1", "job", "submit", "-f", file(t, "%YAML 1.2\n---\nkind: command\nname: v12\ncommand: [run]\nresources: {cpu: 1, memory: 1Gi}\n"))
	assert.Contains(t, out, "job v12-00002 submitted")
	assert.Equal(t, "pool vision set\n", must(t, e, "admin", "pool", "set", "-f", file(t, "%YAML 1.2\n---\nname: vision\n\t\nproject: vision\n")))
	assert.Equal(t, "quota for user:u2 set: cpu=4; removed (a key not listed is 0): gpu/A100, memory\n", must(t, e, "admin", "quota", "set", "--weight", "2", "-f", file(t, "scope: user:u2\n\t\nlimits: {cpu: 4}\n")))

	f := file(t, "kind: command\nname: bs\ncommand:\n  - sh\n  - -c\n  - |\n    echo a\n  \t\n    echo b\nresources: {cpu: 1}\n\t\n")
	_, err := run(t, e, "u1", "job", "submit", "-f", f)
	require.EqualError(t, err, "submit "+f+": parse job spec: line 8 holds only spaces and tabs, within the block scalar (| or >) of line 6, where they may be text: "+
		"empty the line, or indent it with spaces only (YAML takes no tab as indentation)")
	assert.Equal(t, 1, ExitCode(err))
	f = file(t, "%YAML 2.0\n---\nname: vision\n")
	_, err = run(t, e, "admin", "pool", "set", "-f", f)
	require.EqualError(t, err, "set "+f+": parse pool spec: line 1: %YAML 2.0 is not allowed: write %YAML 1.2, or no directive")
}
