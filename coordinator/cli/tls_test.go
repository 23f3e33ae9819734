package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerTLSFlags: the three TLS flags go together, and files that do
// not hold a certificate, key or CA are refused before anything starts;
// a --tls-ca without a certificate is a usage error of the client too.
func TestServerTLSFlags(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users: [{name: dev, token: dev-token-0123456789, admin: true}]\n"), 0o600))
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello\n"), 0o600))
	run := func(args ...string) error {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		return app.RunContext(context.Background(), append([]string{"coordinator"}, args...))
	}
	server := []string{"server", "--id", "s1", "--bootstrap", "--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "s1"), "--tokens", tokens}
	for _, tc := range []struct {
		args []string
		msg  string
		code int
	}{
		{[]string{"--tls-cert", notPEM}, "TLS needs --tls-cert, --tls-key and --tls-ca together", 2},
		{[]string{"--tls-cert", notPEM, "--tls-key", notPEM}, "TLS needs --tls-cert, --tls-key and --tls-ca together", 2},
		{[]string{"--tls-cert", notPEM, "--tls-key", notPEM, "--tls-ca", notPEM}, "load TLS certificate " + notPEM + " and key " + notPEM + ": tls: failed to find any PEM data in certificate input", 1},
	} {
		err := run(append(server, tc.args...)...)
		require.Error(t, err, tc.args)
		assert.Equal(t, tc.msg, err.Error())
		assert.Equal(t, tc.code, ExitCode(err))
	}
	_, err := os.Stat(filepath.Join(dir, "s1", "raft.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing started")

	err = run("--tls-ca", notPEM, "job", "list")
	require.Error(t, err)
	assert.Equal(t, "--tls-ca: TLS CA "+notPEM+" holds no PEM certificate: give the CA certificate that signed the coordinator's, in PEM", err.Error())
	assert.Equal(t, 2, ExitCode(err))
}
