package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
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
	assert.Contains(t, err.Error(), "choose another port with --http-addr")
	assert.Empty(t, out.String(), "no exports for a server that is not there")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the data dir it made is gone")
}

// TestDevThatCannotStartLeavesNoDataDir: a --data-dir that dev made for a
// run that failed to listen is removed again, its missing parents too;
// one that was there stays.
func TestDevThatCannotStartLeavesNoDataDir(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	there := t.TempDir()
	for _, dir := range []string{filepath.Join(there, "new", "data"), there} {
		app := App()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err = app.RunContext(context.Background(), []string{"coordinator", "dev", "--http-addr", ln.Addr().String(), "--log-level", "error", "--data-dir", dir})
		require.ErrorContains(t, err, "address already in use")
	}
	left, err := os.ReadDir(there)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.NotContains(t, names, "new", "the data dir it made is gone, with the parent it made")
	assert.DirExists(t, there, "the data dir that was there stays")
}

// TestServerPortInUseNamesTheFlag: a server whose Raft port is taken says
// which flag picks another (the HTTP port's case is dev's, above).
func TestServerPortInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users: [{name: a, token: t0123456789abcdef, admin: true}]\n"), 0o600))
	app := App()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	err = app.RunContext(context.Background(), []string{"coordinator", "server", "--id", "s1", "--bootstrap", "--log-level", "error",
		"--data-dir", filepath.Join(dir, "s1"), "--tokens", tokens, "--http-addr", "127.0.0.1:0", "--raft-addr", ln.Addr().String()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), "choose another port with --raft-addr")
}
