package k8stest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// mountsUnder takes its prefix as a string, not a path: a node directory's
// name prefix finds the mounts of every node, and a directory with a
// trailing slash finds what is below it but not the directory itself.
func TestMountsUnderPrefix(t *testing.T) {
	assert.Contains(t, mountsUnder("/pro"), "/proc")
	assert.Contains(t, mountsUnder("/proc"), "/proc")
	assert.NotContains(t, mountsUnder("/proc/"), "/proc")
	assert.Empty(t, mountsUnder("/no-such-mount-point-"))
}
