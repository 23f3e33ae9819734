package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
)

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWaitRidesOutRestart: job wait gave up after some seconds of a
// coordinator that did not answer, with the exit status of a failed job.
// Now it waits through a restart of coordinator dev, saying so once, and
// exits 0 when the job, requeued by the shutdown and run again by the
// next dev, completes.
func TestWaitRidesOutRestart(t *testing.T) {
	tmp, data := t.TempDir(), t.TempDir()
	addr := freePort(t)
	dev := startDevAt(t, addr, tmp, "--data-dir", data)
	c := client.New("http://"+addr, token)
	goFile := filepath.Join(t.TempDir(), "go")
	id := submitWhenReady(t, c, fmt.Sprintf("kind: command\nname: waited\ncommand: [sh, -c, 'while [ ! -e %s ]; do sleep 0.1; done']\nresources: {cpu: 1, memory: 1Gi}\n", goFile), "waited")

	var out, errOut lockedBuffer
	wait := exec.Command(filepath.Join(binDir, "coordinator"), "--addr", "http://"+addr, "--token", token, "job", "wait", "--for", "complete", string(id))
	wait.Stdout, wait.Stderr = &out, &errOut
	require.NoError(t, wait.Start())
	waited := make(chan error, 1)
	go func() { waited <- wait.Wait() }()
	t.Cleanup(func() { _ = wait.Process.Kill() })

	dev.interrupt(t)
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "cannot reach the coordinator") }, 30*time.Second, 50*time.Millisecond,
		"job wait says the coordinator is away, and waits on")
	startDevAt(t, addr, tmp, "--data-dir", data)
	require.NoError(t, os.WriteFile(goFile, nil, 0o600))
	select {
	case err := <-waited:
		require.NoError(t, err, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("job wait did not return; stderr: %s", errOut.String())
	}
	assert.Equal(t, fmt.Sprintf("job %s Succeeded\n", id), out.String())
	assert.Equal(t, 1, strings.Count(errOut.String(), "cannot reach the coordinator"), "said once: %s", errOut.String())
}
