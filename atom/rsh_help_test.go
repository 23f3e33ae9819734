package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atom rsh --help (or -h) alone prints its help, not "no host": its other
// flags are ssh's and are not parsed.
func TestRshHelp(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		var out bytes.Buffer
		a := app()
		a.Writer, a.ErrWriter = &out, &out
		require.NoError(t, a.Run([]string{"atom", "rsh", flag}), flag)
		assert.Contains(t, out.String(), "atom rsh [command options] [ssh options] HOST COMMAND...", flag)
		assert.Contains(t, out.String(), "HOST is a task ID of this job", flag)
		assert.NotContains(t, out.String(), "no host", flag)
	}
}
