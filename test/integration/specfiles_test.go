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

// TestSpecFileErrorsNameTheFile: the program refuses a -f file that does
// not exist (it said "read spec: open FILE: no such file or directory",
// exit 1) and a --weight the coordinator refuses (without -f, NaN was
// "json: unsupported value: NaN") as usage errors, exit 2; names the file
// in what the coordinator refuses in a quota, pool, node or cluster spec,
// as job submit does; and takes lines of only tabs and a %YAML 1.2
// directive (YAML 1.2), which the parser refused.
func TestSpecFileErrorsNameTheFile(t *testing.T) {
	addr := freePort(t)
	startDevAt(t, addr, t.TempDir())
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	missing := filepath.Join(dir, "train.yaml")
	quota := write("quota.yaml", "scope: user:dev\nlimits: {cpu: 4}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "submit", "-f", missing}, "spec file " + missing + " does not exist: give the path of a file that holds the job spec, or - to read it from standard input"},
		{[]string{"quota", "set", "-f", missing}, "spec file " + missing + " does not exist: give the path of a file that holds the quota spec, or - to read it from standard input"},
		{[]string{"node", "set", "-f", dir}, "spec file " + dir + " is a directory: give the path of a file that holds the node spec, or - to read it from standard input"},
		{[]string{"quota", "set", "--weight", "NaN", "user:dev"}, "--weight NaN is not allowed: use a number above 0 and at most 1e+06 (default 1)"},
		{[]string{"quota", "set", "-f", quota, "--weight", "NaN"}, "--weight NaN is not allowed: use a number above 0 and at most 1e+06 (default 1)"},
		{[]string{"quota", "set", "--weight", "Inf", "user:dev"}, "--weight +Inf is not allowed: use a number above 0 and at most 1e+06 (default 1)"},
		{[]string{"quota", "set", "-f", quota, "--weight", "0"}, "--weight 0 is not allowed: use a number above 0 and at most 1e+06 (default 1)"},
	} {
		out, errOut, code := cli(t, addr, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Equal(t, "coordinator: "+tc.want+"\n", errOut, "%v", tc.args)
	}

	c := client.New("http://"+addr, token)
	require.Eventually(t, func() bool {
		nodes, err := c.Nodes(context.Background())
		return err == nil && len(nodes) > 0
	}, 30*time.Second, 50*time.Millisecond)
	badQuota := write("bad-quota.yaml", "scope: user:dev\nlimits: {cpu: 4x}\n")
	badPool := write("bad-pool.yaml", "name: vision\nproject: vision\nbogus: 1\n")
	badNode := write("bad-node.yaml", "name: n9\ncpu: 4x\n")
	badCluster := write("bad-cluster.yaml", "name: local\nbackend: nope\n")
	script := write("script.yaml", "kind: command\nname: script\ncommand:\n  - sh\n  - -c\n  - |\n    echo a\n  \t\n    echo b\nresources: {cpu: 1}\n\t\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "set", "-f", badQuota}, "set " + badQuota + `: limits["cpu"] "4x" is not allowed: use a quantity such as 500m or 4`},
		{[]string{"quota", "set", "-f", badQuota, "--weight", "2"}, "set " + badQuota + `: limits["cpu"] "4x" is not allowed: use a quantity such as 500m or 4`},
		{[]string{"pool", "set", "-f", badPool}, "set " + badPool + ": bogus is not a known field: use name, project, members, lendIdle, maxPreemptNotice, minRuntime"},
		{[]string{"node", "set", "-f", badNode}, "set " + badNode + `: cpu "4x" is not allowed: use a quantity such as 500m or 4`},
		{[]string{"cluster", "set", "-f", badCluster}, "set " + badCluster + `: backend "nope" is not allowed: use local or kubernetes`},
		{[]string{"job", "submit", "-f", script}, "submit " + script + ": parse job spec: line 8 holds only spaces and tabs, within the block scalar (| or >) of line 6, " +
			"where they may be text: empty the line, or indent it with spaces only (YAML takes no tab as indentation)"},
	} {
		out, errOut, code := cli(t, addr, tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Equal(t, "coordinator: "+tc.want+"\n", errOut, "%v", tc.args)
	}

	tabs := write("tabs.yaml", "kind: command\nname: tabs\n\t\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\n\t\t\n")
	out, errOut, code := cli(t, addr, "job", "submit", "-f", tabs)
	assert.Equal(t, 0, code, errOut)
	assert.Regexp(t, regexp.MustCompile(`^job tabs-\w+ submitted: \w+\n$`), out)
	v12 := write("v12.yaml", "%YAML 1.2\n---\nkind: command\nname: v12\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\n")
	out, errOut, code = cli(t, addr, "job", "submit", "-f", v12)
	assert.Equal(t, 0, code, errOut)
	assert.Regexp(t, regexp.MustCompile(`^job v12-\w+ submitted: \w+\n$`), out)
	out, errOut, code = cli(t, addr, "quota", "set", "-f", quota, "--weight", "2")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "quota for user:dev set: cpu=4; removed (a key not listed is 0): device/jetson-xavier, gpu, gpu/A100, gpu/V100, memory\n", out,
		"the dev quota's other limits, which the file leaves out")
}
