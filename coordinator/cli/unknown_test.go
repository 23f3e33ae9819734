package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownCommandSuggests: a mistyped command said "No help topic for
// 'lst'" (found by a new user); it now says the command is unknown and
// suggests the nearest one, exit status 3.
func TestUnknownCommandSuggests(t *testing.T) {
	for want, args := range map[string][]string{
		`unknown command 'lst'. Did you mean "list"? (--help lists the commands)`:    {"job", "lst"},
		`unknown command 'jobs'. Did you mean "job"? (--help lists the commands)`:    {"jobs", "list"},
		`unknown command 'qouta'. Did you mean "quota"? (--help lists the commands)`: {"qouta", "get", "user:u1"},
	} {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		err := unknownCommand(app.RunContext(context.Background(), append([]string{"coordinator"}, args...)))
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
		assert.Equal(t, 3, ExitCode(err))
	}
	assert.NoError(t, unknownCommand(nil))
}

// TestAddrChecked: an --addr that names no single coordinator is refused
// at once (exit 2); "http://a,http://b" was retried until --timeout and
// then reported as a coordinator that did not answer.
func TestAddrChecked(t *testing.T) {
	for addr, why := range map[string]string{
		"http://127.0.0.1:7071,http://127.0.0.1:7072": `parse "http://127.0.0.1:7071,http://127.0.0.1:7072": invalid port ":7071,http:" after host`,
		"ftp://coordinator:7070":                      `the scheme is "ftp"`,
		"http://coordinator:7070/v1":                  "it has more than scheme, host and port",
	} {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		err := app.RunContext(context.Background(), []string{"coordinator", "--addr", addr, "job", "list"})
		require.Error(t, err, addr)
		assert.Equal(t, `--addr "`+addr+`" is not allowed (`+why+`): give one coordinator's URL, such as http://127.0.0.1:7070 (https:// with TLS); any server of a cluster answers`, err.Error())
		assert.Equal(t, 2, ExitCode(err))
	}
}
