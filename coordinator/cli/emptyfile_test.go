package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// A spec file that holds no spec is refused before any request, naming
// the file and saying what to write in it, with the exit status of a
// usage error, for every command that reads one: 0 bytes, whitespace,
// comments, a byte-order mark and document markers are empty (a
// byte-order mark used to reach the server, which named no file), and a
// document that is null says so (it was called only comments or
// whitespace).
func TestEmptySpecFileSaysSo(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "no request was expected", http.StatusInternalServerError)
	}))
	defer srv.Close()
	runAt := func(stdin string, args ...string) error {
		app := App()
		var out bytes.Buffer
		app.Reader, app.Writer, app.ErrWriter = strings.NewReader(stdin), &out, &out
		return app.RunContext(context.Background(), append([]string{"coordinator", "--addr", srv.URL, "--token", "t"}, args...))
	}
	cmds := []struct{ args, wanted string }{
		{"job submit", "a job spec in YAML or JSON, a mapping of fields such as kind, name, command and resources"},
		{"quota set", "a quota spec in YAML or JSON, a mapping of fields such as scope, limits and weight"},
		{"quota set --weight 2", "a quota spec in YAML or JSON, a mapping of fields such as scope, limits and weight"},
		{"pool set", "a pool spec in YAML or JSON, a mapping of fields such as name, project, members, lendIdle, maxPreemptNotice and minRuntime"},
		{"node set", "a node spec in YAML or JSON, a mapping of fields such as name, cpu, memory and accelerators"},
		{"cluster set", "a cluster spec in YAML or JSON, a mapping of fields such as name, backend and redis"},
	}
	for _, tc := range []struct{ name, content, is string }{
		{"0 bytes", "", "is empty (only comments or whitespace)"},
		{"whitespace", " \n\t\n", "is empty (only comments or whitespace)"},
		{"comments", "# train.yaml: written later\n\n  # kind: command\n", "is empty (only comments or whitespace)"},
		{"a byte-order mark", "\ufeff", "is empty (only comments or whitespace)"},
		{"a byte-order mark and comments", "\ufeff# kind: command\n \n", "is empty (only comments or whitespace)"},
		{"document markers", "---\n# later\n...\n", "is empty (only comments or whitespace)"},
		{"~", "~\n", "is null (the document is ~)"},
		{"null", "\ufeff--- null\n", "is null (the document is null)"},
	} {
		empty := file(t, tc.content)
		for _, c := range cmds {
			err := runAt("", append(strings.Fields(c.args), "-f", empty)...)
			require.EqualError(t, err, "spec file "+empty+" "+tc.is+": give "+c.wanted, "%s, %s", tc.name, c.args)
			assert.Equal(t, 2, ExitCode(err), "%s, %s", tc.name, c.args)
		}
		err := runAt(tc.content, "job", "submit", "-f", "-")
		require.EqualError(t, err, "the spec on standard input "+tc.is+": give "+cmds[0].wanted, tc.name)
		assert.Equal(t, 2, ExitCode(err), tc.name)
	}
	assert.Zero(t, requests.Load(), "no request was made")
}

// A spec file that ends with an empty document (---) is one spec, as
// kubectl takes it; two specs in one file are refused as before.
func TestSpecFileWithTrailingSeparator(t *testing.T) {
	e := apitest.NewEnv(t, "")
	out := must(t, e, "u1", "job", "submit", "-f", file(t, "kind: command\nname: trail\ncommand: [run]\nresources: {cpu: 1, memory: 1Gi}\n...\n---\n"))
	assert.Contains(t, out, "job trail-00001 submitted")
	out = must(t, e, "admin", "pool", "set", "-f", file(t, "\ufeffname: vision\nproject: vision\n---\n"))
	assert.Equal(t, "pool vision set\n", out)

	two := file(t, "kind: command\nname: a\ncommand: [run]\n---\nkind: command\nname: b\ncommand: [run]\n")
	_, err := run(t, e, "u1", "job", "submit", "-f", two)
	require.EqualError(t, err, "submit "+two+": job spec holds several YAML documents (a second starts at line 4): the spec must be a single document")
	assert.Equal(t, 1, ExitCode(err))
}

// A refusal of a spec read from standard input (-f -) says so, rather
// than naming a file called "-".
func TestRefusedSpecOnStandardInputSaysSo(t *testing.T) {
	e := apitest.NewEnv(t, "")
	two := "kind: command\nname: a\ncommand: [run]\n---\nkind: command\nname: b\ncommand: [run]\n"
	for _, tc := range []struct{ args, verb string }{{"job submit", "submit"}, {"pool set", "set"}} {
		var out bytes.Buffer
		app := App()
		app.Reader, app.Writer, app.ErrWriter = strings.NewReader(two), &out, &out
		err := app.RunContext(context.Background(), append([]string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["admin"]}, append(strings.Fields(tc.args), "-f", "-")...))
		spec := strings.Fields(tc.args)[0] + " spec"
		require.EqualError(t, err, tc.verb+" the spec on standard input: "+spec+" holds several YAML documents (a second starts at line 4): the spec must be a single document", tc.args)
		assert.Equal(t, 1, ExitCode(err), tc.args)
	}
}
