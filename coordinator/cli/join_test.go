package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
)

// `coordinator server` whose join the cluster refuses for good (another
// --secret) exits with an error that says what to fix, instead of asking
// forever; an https:// --join without TLS is refused before it starts.
func TestServerExitsWhenJoinRefused(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users: [{name: dev, token: dev-token-0123456789, admin: true}]\n"), 0o600))
	tf, err := api.LoadTokens(tokens)
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Secret: "the-secret", Tokens: tf, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: filepath.Join(dir, "s1"), Bootstrap: true}
	s1, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s1.Close() })

	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := app.RunContext(ctx, append([]string{"coordinator", "server", "--id", "s2", "--http-addr", "127.0.0.1:0",
			"--raft-addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "s2"), "--tokens", tokens}, args...))
		require.NoError(t, ctx.Err(), "it exits on its own")
		return out.String(), err
	}
	out, err := run("--join", s1.URL, "--secret", "another-secret")
	require.Error(t, err)
	assert.Equal(t, "coordinator server s2 cannot join the cluster: join "+s1.URL+": refused (this endpoint is for coordinator servers only: the shared secret sent does not match this cluster's: give every server the same --secret (or $ATOM_CLUSTER_SECRET)): the shared secret does not match: give this server the cluster's --secret (or $ATOM_CLUSTER_SECRET)", err.Error())
	assert.Contains(t, out, "level=ERROR msg=\"join refused: asking again cannot help\"")

	_, err = run("--join", "https://127.0.0.1:7071", "--secret", "the-secret")
	require.Error(t, err)
	assert.Equal(t, "--join https://127.0.0.1:7071: this server runs without TLS, so it can neither serve HTTPS nor verify a server that does: use http://127.0.0.1:7071, or start it with --tls-cert, --tls-key and --tls-ca of the cluster's CA", err.Error())
}
