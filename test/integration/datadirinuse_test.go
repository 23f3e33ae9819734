package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDataDirInUse: a second coordinator on a data dir another one runs
// on waited for ever on its lock, saying nothing and ignoring SIGTERM.
// Now `coordinator dev` and `coordinator server` fail at once, naming the
// data dir and the coordinator that holds it.
func TestDataDirInUse(t *testing.T) {
	data := t.TempDir()
	first := startDev(t, t.TempDir(), "--data-dir", data)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users:\n  - {name: dev, token: "+token+", admin: true}\n"), 0o600))
	want := fmt.Sprintf("coordinator: data dir %s is in use by another coordinator (pid %d): stop it or give another --data-dir\n", data, first.cmd.Process.Pid)
	for _, args := range [][]string{
		{"dev", "--http-addr", freePort(t), "--data-dir", data},
		{"server", "--id", "s2", "--bootstrap", "--http-addr", freePort(t), "--raft-addr", freePort(t), "--data-dir", data, "--tokens", tokens},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "coordinator"), append(args, "--log-level", "error")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, ctx.Err(), "coordinator %s returns", args[0])
		cancel()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "coordinator %s fails: %s", args[0], out)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Equal(t, want, string(out), args[0])
	}
}
