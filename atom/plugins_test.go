package main_test

import (
	"os"
	"path/filepath"
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
