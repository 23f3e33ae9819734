package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/coordinator/cli"
)

// shellLangs are the fenced blocks whose lines are commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// makeTarget is a rule of the Makefile: "name: ...".
var makeTarget = regexp.MustCompile(`(?m)^([a-z][\w-]*)\s*:`)

// Every coordinator command a document's shell block shows exists, with
// the long flags it gives (its own or the global ones), and every make
// target it names is one of the Makefile's.
func TestShownCommandsExist(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	app := cli.App()
	checked := 0
	for _, f := range markdown(t) {
		for _, b := range read(t, f).blocks {
			if !shellLangs[b.lang] {
				continue
			}
			for i, line := range strings.Split(b.text, "\n") {
				where := fmt.Sprintf("%s:%d", f, b.line+1+i)
				for _, words := range commands(line) {
					switch {
					case len(words) > 0 && (words[0] == "make"):
						for _, w := range words[1:] {
							if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
								checked++
								assert.True(t, targets[w], "%s: make %s: the Makefile has no such target", where, w)
							}
						}
					case len(words) > 0 && filepath.Base(words[0]) == "coordinator":
						checked++
						if err := checkCommand(app, words[1:]); err != nil {
							t.Errorf("%s: %s: %v", where, strings.Join(words, " "), err)
						}
					}
				}
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 10, "the README's commands are checked")

	// The README's CLI table: its first column's commands, each
	// alternative (pool list\|set) of each.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	rows := 0
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.ReplaceAll(line[2:], `\|`, "\x00"), " | ")
		for _, m := range inlineCode.FindAllString(cell, -1) {
			for _, words := range alternatives(strings.Fields(strings.Trim(m, "`"))) {
				rows++
				if err := checkCommand(app, words); err != nil {
					t.Errorf("README.md's CLI table: %s: %v", strings.Join(words, " "), err)
				}
			}
		}
	}
	assert.Greater(t, rows, 20, "the README's CLI table is checked")

	assert.EqualError(t, checkCommand(app, []string{"job", "nosuch", "x"}), `coordinator job has no command "nosuch"`)
	assert.EqualError(t, checkCommand(app, []string{"-o", "json", "job", "list", "--nosuch"}), "coordinator job list has no flag --nosuch")
	assert.NoError(t, checkCommand(app, []string{"--addr", "http://x", "job", "logs", "-f", "--task", "1", "ID"}))
}

// commands splits a shell line into its simple commands' words: comments,
// prompts ("alice$ "), variable assignments and sudo left out; a quoted
// word or a placeholder ends the words checked.
func commands(line string) [][]string {
	if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
		line = line[:i]
	}
	if _, rest, ok := strings.Cut(line, "$ "); ok && !strings.ContainsAny(line[:strings.Index(line, "$ ")], " '\"") {
		line = rest
	}
	var out [][]string
	for _, part := range regexp.MustCompile(`&&|\|\||[;|]|\$\(|<\(|\)`).Split(line, -1) {
		var words []string
		for _, w := range strings.Fields(part) {
			if len(words) == 0 && (w == "sudo" || regexp.MustCompile(`^[A-Z_]+=`).MatchString(w)) {
				continue
			}
			if strings.ContainsAny(w, `'"<>[]{}$`) || strings.Contains(w, "...") {
				break
			}
			words = append(words, w)
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

// checkCommand walks args down app's commands: each word before the first
// argument names a subcommand while the command has any, and each long
// flag is the command's or a global one.
func checkCommand(app *ucli.App, args []string) error {
	flags := map[string]bool{"help": false} // name: takes a value
	addFlags := func(fs []ucli.Flag) {
		for _, f := range fs {
			v, ok := f.(interface{ TakesValue() bool })
			for _, n := range f.Names() {
				flags[n] = ok && v.TakesValue()
			}
		}
	}
	addFlags(app.Flags)
	cmds := app.Commands
	path := "coordinator"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			name, _, valued := strings.Cut(strings.TrimLeft(a, "-"), "=")
			takes, ok := flags[name]
			if !ok {
				return fmt.Errorf("%s has no flag %s", path, a)
			}
			if takes && !valued {
				i++
			}
			continue
		}
		if len(cmds) == 0 {
			continue // an argument
		}
		var next *ucli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				next = c
			}
		}
		if next == nil {
			return fmt.Errorf("%s has no command %q", path, a)
		}
		path += " " + a
		addFlags(next.Flags)
		cmds = next.Subcommands
	}
	return nil
}

// alternatives expands a table cell's words, alternatives separated by
// NUL (an escaped '|'), into each command they stand for: brackets
// dropped, from the first placeholder ("...") on left out.
func alternatives(words []string) [][]string {
	out := [][]string{nil}
	for _, w := range words {
		w = strings.Trim(w, "[]")
		if strings.Contains(w, "...") {
			break
		}
		var next [][]string
		for _, alt := range strings.Split(w, "\x00") {
			for _, o := range out {
				next = append(next, append(append([]string(nil), o...), alt))
			}
		}
		out = next
	}
	return out
}
