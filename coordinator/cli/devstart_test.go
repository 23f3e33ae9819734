package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDevThatCannotStartLeavesNothing: `coordinator dev` on a port in use
// printed the exports and a token, then failed, and left its new data dir
// (with the tokens file) in the temporary directory (found by a new user
// starting a second dev server). Now it fails saying why, prints no
// exports and removes what it made.
func TestDevThatCannotStartLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var out, errOut bytes.Buffer
	app := App()
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.RunContext(context.Background(), []string{"coordinator", "dev", "--http-addr", ln.Addr().String(), "--log-level", "error"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Empty(t, out.String(), "no exports for a server that is not there")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the data dir it made is gone")
}
