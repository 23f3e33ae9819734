package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestLogsFollowRidesOutRestart: job logs -f ended with a bare
// "unexpected EOF" when its coordinator died. Now, when coordinator dev
// is killed with kill -9 and started again on the same data dir (its task
// runs on, adopted), the follow says so once, connects again and goes on
// from where it was: every line once, in order, until the task ends.
func TestLogsFollowRidesOutRestart(t *testing.T) {
	tmp, data, addr := t.TempDir(), t.TempDir(), freePort(t)
	args := []string{"--data-dir", data, "--heartbeat-ttl", "15s"} // time enough for a restart
	dev := startDevAt(t, addr, tmp, args...)
	c := client.New("http://"+addr, token)
	goFile := filepath.Join(t.TempDir(), "go")
	id := submitWhenReady(t, c, fmt.Sprintf("kind: command\nname: chatty\ncommand: [sh, -c, 'i=0; while [ ! -e %s ] && [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); sleep 0.05; done; echo done']\nresources: {cpu: 1, memory: 1Gi}\n", goFile), "chatty")
	t.Cleanup(func() { _ = os.WriteFile(goFile, nil, 0o600) }) // a failed run leaves no loop behind

	var out, errOut lockedBuffer
	logs := exec.Command(filepath.Join(binDir, "coordinator"), "--addr", "http://"+addr, "--token", token, "job", "logs", "-f", string(id))
	logs.Stdout, logs.Stderr = &out, &errOut
	require.NoError(t, logs.Start())
	followed := make(chan error, 1)
	go func() { followed <- logs.Wait() }()
	t.Cleanup(func() { _ = logs.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "line 5\n") }, 30*time.Second, 50*time.Millisecond)

	require.NoError(t, dev.cmd.Process.Kill())
	<-dev.exited
	dev.exited <- nil // for the cleanup
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "lost the output stream") }, 30*time.Second, 50*time.Millisecond,
		"job logs -f says the stream broke, and goes on: %s", errOut.String())
	at := strings.Count(out.String(), "\n")
	startDevAt(t, addr, tmp, args...)
	require.Eventually(t, func() bool { return strings.Count(out.String(), "\n") > at+20 }, 30*time.Second, 50*time.Millisecond,
		"the output goes on after the restart")
	require.NoError(t, os.WriteFile(goFile, nil, 0o600))
	select {
	case err := <-followed:
		require.NoError(t, err, "stderr: %s", errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("job logs -f did not return; stderr: %s", errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Greater(t, len(lines), at+20)
	for i, l := range lines[:len(lines)-1] {
		require.Equal(t, "line "+strconv.Itoa(i), l, "every line once, in order")
	}
	assert.Equal(t, "done", lines[len(lines)-1])
	assert.Equal(t, 1, strings.Count(errOut.String(), "lost the output stream"), "said once: %s", errOut.String())
	st, err := c.Job(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
}
