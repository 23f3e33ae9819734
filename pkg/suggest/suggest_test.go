package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A near name is found, the nearest of several; a far one, or the name
// itself, is not.
func TestNearest(t *testing.T) {
	fields := []string{"kind", "name", "command", "args", "replicas", "resources", "restartPolicy"}
	for name, want := range map[string]string{
		"comand":        "command",
		"replica":       "replicas",
		"resource":      "resources",
		"restartpolicy": "restartPolicy",
		"banana":        "",
		"kind":          "",
	} {
		assert.Equal(t, want, Nearest(name, fields), name)
	}
	assert.Equal(t, "data-dir", Nearest("data", []string{"http-addr", "data-dir"}))
}
