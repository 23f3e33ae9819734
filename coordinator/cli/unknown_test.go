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
