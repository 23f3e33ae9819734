package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
)

// cli runs the coordinator program against addr and returns its standard
// output, standard error and exit status.
func cli(t *testing.T, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, "coordinator"), append([]string{"--addr", "http://" + addr, "--token", token}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// TestSpecFilesWithoutSpec: a spec file of nothing but a byte-order mark
// (and comments) reached coordinator dev, which answered "job spec is
// empty", or for a quota, pool, node or cluster file "scope is required",
// naming no file; a null document was called only comments or
// whitespace; a file ending with --- was refused as two documents. Now
// the program refuses a file without a spec before any request, naming
// it, with exit status 2 (a usage error); takes a trailing ---; and
// refuses two documents as before.
func TestSpecFilesWithoutSpec(t *testing.T) {
	addr := freePort(t)
	startDevAt(t, addr, t.TempDir())
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	bom := write("bom.yaml", "\ufeff")
	bomComments := write("later.yaml", "\ufeff# kind: command\n\n")
	null := write("null.yaml", "~\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "submit", "-f", bom}, "spec file " + bom + " is empty (only comments or whitespace): give a job spec in YAML or JSON, a mapping of fields such as kind, name, command and resources"},
		{[]string{"job", "submit", "-f", bomComments}, "spec file " + bomComments + " is empty (only comments or whitespace): give a job spec in YAML or JSON, a mapping of fields such as kind, name, command and resources"},
		{[]string{"quota", "set", "-f", bom}, "spec file " + bom + " is empty (only comments or whitespace): give a quota spec in YAML or JSON, a mapping of fields such as scope, limits and weight"},
		{[]string{"pool", "set", "-f", bomComments}, "spec file " + bomComments + " is empty (only comments or whitespace): give a pool spec in YAML or JSON, a mapping of fields such as name, project, members, lendIdle, maxPreemptNotice and minRuntime"},
		{[]string{"node", "set", "-f", bom}, "spec file " + bom + " is empty (only comments or whitespace): give a node spec in YAML or JSON, a mapping of fields such as name, cpu, memory and accelerators"},
		{[]string{"cluster", "set", "-f", bom}, "spec file " + bom + " is empty (only comments or whitespace): give a cluster spec in YAML or JSON, a mapping of fields such as name, backend and redis"},
		{[]string{"job", "submit", "-f", null}, "spec file " + null + " is null (the document is ~): give a job spec in YAML or JSON, a mapping of fields such as kind, name, command and resources"},
		{[]string{"quota", "set", "-f", null}, "spec file " + null + " is null (the document is ~): give a quota spec in YAML or JSON, a mapping of fields such as scope, limits and weight"},
	} {
		out, errOut, code := cli(t, addr, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Equal(t, "coordinator: "+tc.want+"\n", errOut, "%v", tc.args)
	}

	// The refusals came before any request; the cluster is ready for one.
	c := client.New("http://"+addr, token)
	require.Eventually(t, func() bool {
		nodes, err := c.Nodes(context.Background())
		return err == nil && len(nodes) > 0
	}, 30*time.Second, 50*time.Millisecond)
	trailing := write("trailing.yaml", "kind: command\nname: trailing\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\n...\n---\n")
	out, errOut, code := cli(t, addr, "job", "submit", "-f", trailing)
	assert.Equal(t, 0, code, errOut)
	assert.Regexp(t, regexp.MustCompile(`^job trailing-\w+ submitted: \w+\n$`), out)

	two := write("two.yaml", "kind: command\nname: one\ncommand: [true]\n---\nkind: command\nname: two\ncommand: [true]\n")
	out, errOut, code = cli(t, addr, "job", "submit", "-f", two)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "coordinator: submit "+two+": job spec holds several YAML documents (a second starts at line 4): the spec must be a single document\n", errOut)
}
