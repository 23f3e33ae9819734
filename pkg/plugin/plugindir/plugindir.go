// Package plugindir finds atom's external job-type plugins in a
// directory, without the plugin machinery: atom lists and starts them
// (pkg/plugin), the coordinator learns which job kinds its tasks can run.
package plugindir

import (
	"os"
	"path/filepath"
	"strings"
)

// Prefix names external job-type plugins: atom-plugin-KIND.
const Prefix = "atom-plugin-"

// Default is where atom looks for them when ATOM_PLUGIN_DIR names no
// other directory.
const Default = "/app/plugins"

// Executable reports whether path is an executable regular file.
func Executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Plugins lists the plugins of dir: their paths by kind (none when dir
// cannot be read).
func Plugins(dir string) map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if k, ok := strings.CutPrefix(e.Name(), Prefix); ok && k != "" && Executable(p) {
			out[k] = p
		}
	}
	return out
}
