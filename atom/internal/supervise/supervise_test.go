package supervise

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job killed by a signal is described by the signal's name, its exit
// code 128+n as a shell says it.
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		says   string
	}{
		{"exit 3", 3, "exit code 3"},
		{"kill -KILL $$", 137, "killed by SIGKILL"},
		{"kill -TERM $$", 143, "killed by SIGTERM"},
		{"kill -SEGV $$", 139, "killed by SIGSEGV"},
	} {
		ch, err := Start([]string{"sh", "-c", c.script}, nil, nil)
		require.NoError(t, err)
		select {
		case <-ch.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not end", c.script)
		}
		assert.Equal(t, c.code, ch.ExitCode(), c.script)
		assert.Equal(t, c.says, ch.Describe(), c.script)
	}
	assert.Equal(t, "signal 77", signalName(77))
}
