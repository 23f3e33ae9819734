package cliusage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// help COMMAND shows what COMMAND --help shows, its subcommands listed,
// at any depth; help alone shows the app's help.
func TestHelpCommand(t *testing.T) {
	helpOf := func(args string) string {
		var out bytes.Buffer
		app, _ := envApp(&out)
		app.Commands[0].Usage = "the top command"
		HelpCommand(app)
		require.NoError(t, app.Run(append([]string{"t"}, strings.Fields(args)...)), args)
		return out.String()
	}
	top := helpOf("top --help")
	assert.Contains(t, top, "COMMANDS:\n   sub", "the subcommands are listed")
	assert.Equal(t, top, helpOf("help top"))
	assert.Equal(t, top, helpOf("h top"))
	sub := helpOf("top sub --help")
	assert.Contains(t, sub, "--wait value, -w value")
	assert.Equal(t, sub, helpOf("help top sub"))
	assert.Equal(t, helpOf("--help"), helpOf("help"))
	assert.Contains(t, helpOf("help"), "help, h  show the commands, or a command's help (help job submit)")
}
