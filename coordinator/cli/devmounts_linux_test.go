package cli

import (
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stale dev dir's mounts are the ones at the dir or below it (not a
// sibling that shares its name's start), named with mountinfo's octal
// escapes undone, and come deepest first and, on one point, the latest
// first: the order to unmount them in.
func TestUnmountOrder(t *testing.T) {
	const table = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:1 /tmp/d /tmp/atom-dev-1 rw,relatime shared:1 - ext4 /dev/sda1 rw
31 30 8:1 /tmp/c /tmp/atom-dev-1/work/tasks/t-0/configs ro,relatime shared:1 - ext4 /dev/sda1 rw
32 30 8:1 /tmp/s /tmp/atom-dev-1/a\040b\134c\011d rw,relatime shared:1 - ext4 /dev/sda1 rw
33 31 8:1 /tmp/c /tmp/atom-dev-1/work/tasks/t-0/configs ro,relatime shared:1 - ext4 /dev/sda1 rw
34 22 8:1 /tmp/e /tmp/atom-dev-10 rw,relatime shared:1 - ext4 /dev/sda1 rw
`
	infos, err := mountinfo.GetMountsFromReader(strings.NewReader(table), mountinfo.PrefixFilter("/tmp/atom-dev-1"))
	require.NoError(t, err)
	got := unmountOrder(infos)
	assert.Equal(t, []string{
		"/tmp/atom-dev-1/work/tasks/t-0/configs", // id 33, on top of 31
		"/tmp/atom-dev-1/work/tasks/t-0/configs",
		"/tmp/atom-dev-1/a b\\c\td",
		"/tmp/atom-dev-1",
	}, got)
	assert.Nil(t, unmountOrder(nil), "no mounts, none to unmount")
}
