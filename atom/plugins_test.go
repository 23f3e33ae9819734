package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPluginList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-ray"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-mpi"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-notes"), []byte("not executable"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "atom-plugin-dir"), 0o755))
	code, out := exitCode(t, atomCmd(t, nil, "plugin", "list", "--plugin-dir", dir))
	require.Equal(t, 0, code, out)
	assert.Equal(t, "command\tbuilt-in\nmpi\t"+dir+"/atom-plugin-mpi (instead of the built-in)\nservice\tbuilt-in\nspark\tbuilt-in\nray\t"+dir+"/atom-plugin-ray\n", out)
}

// A job type that does not exist, or whose plugin dies, fails the task
// with exit code 4 and a reason; the command never starts.
func TestPluginFailuresFailTheTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-boom"), []byte("#!/bin/sh\necho boom >&2\nexit 1\n"), 0o755))
	marker := filepath.Join(t.TempDir(), "ran")
	for kind, want := range map[string]string{
		"ray":  `atom: unknown job kind "ray": atom runs [command mpi service spark] and plugins named atom-plugin-<kind> in "` + dir + `"`,
		"boom": `atom: start plugin for kind "boom" (` + dir + `/atom-plugin-boom): `,
	} {
		code, out := exitCode(t, atomCmd(t, []string{"ATOM_JOB_KIND=" + kind, "ATOM_PLUGIN_DIR=" + dir}, "run", "--", "touch", marker))
		assert.Equal(t, 4, code, out)
		assert.Contains(t, out, want)
	}
	assert.NoFileExists(t, marker)
}

// buildHelloPlugin builds the external plugin in testdata/plugin-hello
// into a new plugin directory as atom-plugin-hello and returns the
// directory and the plugin's hex SHA-256.
func buildHelloPlugin(t *testing.T) (dir, sum string) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "atom-plugin-hello")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/plugin-hello").CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return dir, hex.EncodeToString(s[:])
}

// With a checksum file, an external plugin runs only if it matches its
// sum; otherwise the task fails with exit code 4 and a one-line reason
// that names the plugin and both sums, and the command never starts.
func TestPluginChecksumRefusal(t *testing.T) {
	t.Parallel()
	dir, sum := buildHelloPlugin(t)
	plugin := filepath.Join(dir, "atom-plugin-hello")
	wrong := strings.Repeat("0", 64)
	elsewhere := filepath.Join(t.TempDir(), "sums")
	require.NoError(t, os.WriteFile(elsewhere, []byte(sum+"  atom-plugin-hello\n"), 0o644))
	for name, tc := range map[string]struct {
		sums string   // SHA256SUMS in the plugin directory; "" for none
		env  []string // more environment
		want string   // the reason's line; "" when the job runs
	}{
		"no checksum file": {},
		"matching":         {sums: sum + "  atom-plugin-hello\n"},
		"mismatch":         {sums: wrong + "  atom-plugin-hello\n", want: "atom: plugin checksum: plugin " + plugin + " does not match its checksum: expected sha256 " + wrong + ", actual " + sum + ": reinstall the plugin or update its sum"},
		"not listed":       {sums: sum + "  atom-plugin-other\n", want: "atom: plugin checksum: plugin " + plugin + " is not listed in " + dir + "/SHA256SUMS: add its line (sha256sum atom-plugin-hello) or remove the plugin"},
		"named file wins":  {sums: wrong + "  atom-plugin-hello\n", env: []string{"ATOM_PLUGIN_SHA256SUMS=" + elsewhere}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "SHA256SUMS")))
			if tc.sums != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(tc.sums), 0o644))
			}
			marker := filepath.Join(t.TempDir(), "ran")
			env := append([]string{"ATOM_JOB_KIND=hello", "ATOM_PLUGIN_DIR=" + dir}, tc.env...)
			code, out := exitCode(t, atomCmd(t, env, "run", "--", "touch", marker))
			if tc.want == "" {
				require.Equal(t, 0, code, out)
				assert.FileExists(t, marker)
				return
			}
			assert.Equal(t, 4, code, out)
			assert.Equal(t, tc.want+"\n", out)
			assert.NoFileExists(t, marker)
		})
	}
}
