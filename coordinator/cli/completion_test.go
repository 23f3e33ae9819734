package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// coordinator completion prints each shell's script (checked by that
// shell's parser where it is installed); the scripts ask the command
// for what may come next.
func TestCompletion(t *testing.T) {
	e := apitest.NewEnv(t, "")
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out := must(t, e, "u1", "completion", shell)
		assert.Contains(t, out, "coordinator", shell)
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s here: its script's syntax is not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "script")
		require.NoError(t, os.WriteFile(f, []byte(out), 0o600))
		b, err := exec.Command(path, "-n", f).CombinedOutput()
		assert.NoError(t, err, "%s -n: %s", shell, b)
	}
	_, err := run(t, e, "u1", "completion", "tcsh")
	assert.EqualError(t, err, `shell "tcsh" is not allowed: use bash, zsh or fish`)

	// What the scripts ask: the subcommands, the flags. (urfave/cli reads
	// the word before the cursor from os.Args.)
	complete := func(args ...string) []string {
		t.Helper()
		saved := os.Args
		defer func() { os.Args = saved }()
		os.Args = append([]string{"coordinator"}, args...)
		return strings.Fields(must(t, e, "u1", args...))
	}
	assert.Subset(t, complete("job", "--generate-bash-completion"), []string{"submit", "list", "status", "why", "events", "wait", "cancel", "logs"})
	assert.Subset(t, complete("job", "wait", "--t", "--generate-bash-completion"), []string{"--timeout"})
	// A bare "-" (what the bash script sends for "--", which would end
	// the flags) lists the flags, even of a command with required ones.
	assert.Subset(t, complete("job", "submit", "-", "--generate-bash-completion"), []string{"--file"})

	// The bash script needs no bash-completion package, completes
	// bin/coordinator too, and asks with "-" for a word starting "--".
	if _, err := exec.LookPath("bash"); err == nil {
		script := must(t, e, "u1", "completion", "bash")
		b, err := exec.Command("bash", "-c", script+`
coordinator() { [ "$3 $4" = "- --generate-bash-completion" ] && echo --file --wait; }
COMP_WORDS=(coordinator job submit --); COMP_CWORD=3; _coordinator_complete
echo "${COMPREPLY[*]}"; complete -p bin/coordinator`).CombinedOutput()
		require.NoError(t, err, "%s", b)
		assert.Equal(t, "--file --wait\n"+
			"complete -o bashdefault -o default -F _coordinator_complete bin/coordinator\n", string(b))
	}
}
