package plugin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/plugin"
)

// installPlugin copies the test binary (a real, built plugin) into a new
// plugin directory as atom-plugin-echo and returns the directory, the
// plugin's path and its hex SHA-256.
func installPlugin(t *testing.T) (dir, path, sum string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "atom-plugin-echo")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return dir, path, hex.EncodeToString(h.Sum(nil))
}

func externalLoader(t *testing.T, dir string) *plugin.Loader {
	t.Setenv("ATOM_TEST_SERVE", "1")
	return &plugin.Loader{Catalog: plugin.NewCatalog(), Dir: dir, Stderr: io.Discard}
}

// With a SHA256SUMS file in the plugin directory, a plugin runs only if it
// is listed with the sum of its bytes; without one, plugins are not
// checked.
func TestPluginChecksums(t *testing.T) {
	other := strings.Repeat("ab", 32)
	for name, tc := range map[string]struct {
		sums    func(sum string) string // the SHA256SUMS file; nil: none
		tamper  bool                    // change the binary after its sum is taken
		wantErr string                  // "" when the plugin must start
	}{
		"no checksum file": {},
		"listed, matching": {sums: func(s string) string { return s + "  atom-plugin-echo\n" }},
		"binary-mode line": {sums: func(s string) string {
			return "# shipped plugins\n" + other + "  atom-plugin-mpi\n" + s + " *./atom-plugin-echo\n"
		}},
		"listed, different": {sums: func(string) string { return other + "  atom-plugin-echo\n" }, wantErr: "plugin checksum: plugin {dir}/atom-plugin-echo does not match its checksum: expected sha256 " + other + ", actual {sum}: reinstall the plugin or update its sum"},
		"tampered":          {sums: func(s string) string { return s + "  atom-plugin-echo\n" }, tamper: true, wantErr: "plugin checksum: plugin {dir}/atom-plugin-echo does not match its checksum: expected sha256 {orig}, actual {sum}: reinstall the plugin or update its sum"},
		"not listed":        {sums: func(string) string { return other + "  atom-plugin-mpi\n" }, wantErr: "plugin checksum: plugin {dir}/atom-plugin-echo is not listed in {dir}/SHA256SUMS: add its line (sha256sum atom-plugin-echo) or remove the plugin"},
		"malformed file":    {sums: func(s string) string { return s[:10] + "  atom-plugin-echo\n" }, wantErr: "plugin {dir}/atom-plugin-echo: plugin checksum: checksum file {dir}/SHA256SUMS: line 1 is not a checksum line"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, path, sum := installPlugin(t)
			orig := sum
			if tc.sums != nil {
				require.NoError(t, os.WriteFile(filepath.Join(dir, plugin.SumsFile), []byte(tc.sums(sum)), 0o644))
			}
			if tc.tamper {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.Write([]byte("x"))
				require.NoError(t, err)
				require.NoError(t, f.Close())
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				s := sha256.Sum256(b)
				sum = hex.EncodeToString(s[:])
			}
			h, err := externalLoader(t, dir).Open(context.Background(), "echo")
			if tc.wantErr == "" {
				require.NoError(t, err)
				h.Close()
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, plugin.ErrChecksum)
			want := strings.NewReplacer("{dir}", dir, "{orig}", orig, "{sum}", sum).Replace(tc.wantErr)
			assert.Contains(t, err.Error(), want)
			assert.NotContains(t, err.Error(), "\n", "one line, fit for a task's reason")
		})
	}
}

// A checksum file named explicitly (atom --plugin-sums) is used instead of
// the directory's, and must exist.
func TestPluginChecksumsElsewhere(t *testing.T) {
	dir, _, sum := installPlugin(t)
	sums := filepath.Join(t.TempDir(), "plugins.sha256")
	l := externalLoader(t, dir)
	l.Sums = sums
	_, err := l.Open(context.Background(), "echo")
	require.ErrorIs(t, err, plugin.ErrChecksum)
	assert.Contains(t, err.Error(), "read checksum file: open "+sums+": no such file or directory: external plugins run only when it can be read")

	require.NoError(t, os.WriteFile(sums, []byte(sum+"  atom-plugin-echo\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, plugin.SumsFile), []byte(strings.Repeat("0", 64)+"  atom-plugin-echo\n"), 0o644))
	h, err := l.Open(context.Background(), "echo")
	require.NoError(t, err, "the named file wins over the directory's")
	h.Close()
}

func TestParseSums(t *testing.T) {
	a, b := strings.Repeat("a1", 32), strings.Repeat("B2", 32)
	s, err := plugin.ParseSums(strings.NewReader(fmt.Sprintf("%s  atom-plugin-x\r\n\n# c\n%s *dir/atom-plugin-y\n%s  atom-plugin-x\n", a, b, a)))
	require.NoError(t, err)
	ha, _ := hex.DecodeString(a)
	hb, _ := hex.DecodeString(b)
	assert.Equal(t, plugin.Sums{"atom-plugin-x": ha, "atom-plugin-y": hb}, s)
	for in, want := range map[string]string{
		a + "atom-plugin-x\n":              "line 1 is not a checksum line",
		"zz" + a[2:] + "  atom-plugin-x\n": "line 1 is not a checksum line",
		a + "  \n":                         "line 1 is not a checksum line",
		a + "  atom-plugin-x\n" + b + "  atom-plugin-x\n": "line 2 gives atom-plugin-x a second, different sum",
	} {
		_, err := plugin.ParseSums(strings.NewReader(in))
		assert.ErrorContains(t, err, want, in)
	}
}

// Plugins start only with atom's handshake: a real plugin binary built
// for another protocol version is refused (with one line), and the
// binary run by hand, without the magic cookie, refuses to serve.
func TestPluginHandshake(t *testing.T) {
	dir, path, _ := installPlugin(t)
	oldwire := filepath.Join(dir, "atom-plugin-oldwire")
	require.NoError(t, os.Rename(path, oldwire))
	_, err := externalLoader(t, dir).Open(context.Background(), "oldwire")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `start plugin for kind "oldwire" (`+oldwire+`): incompatible API version with plugin. Plugin version: 99, Client versions: [1]`)
	assert.NotContains(t, err.Error(), "\n")

	cmd := exec.Command(oldwire)
	cmd.Env = []string{"ATOM_TEST_SERVE=1"} // no ATOM_PLUGIN_MAGIC_COOKIE
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(out), "This binary is a plugin")
}
