package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestLogsFollowRidesOutRequeue: Ctrl-C on coordinator dev while a job
// runs puts the job back to Pending, and job logs -f exited 0 without a
// word, as if the job had ended. Now it says the job was requeued and
// follows its next attempt, run by the next dev on the same data dir,
// from that task's start, until the job ends; what the first attempt
// wrote as it was stopped, after its stream ended, is not left out.
func TestLogsFollowRidesOutRequeue(t *testing.T) {
	tmp, data, addr := t.TempDir(), t.TempDir(), freePort(t)
	args := []string{"--data-dir", data}
	dev := startDevAt(t, addr, tmp, args...)
	c := client.New("http://"+addr, token)
	goFile := filepath.Join(t.TempDir(), "go")
	id := submitWhenReady(t, c, fmt.Sprintf("kind: command\nname: requeued\ncommand: [sh, -c, 'trap ''echo got TERM; exit 143'' TERM; echo start $ATOM_TASK_ID; while [ ! -e %s ]; do sleep 1; done; echo done']\nresources: {cpu: 1, memory: 1Gi}\n", goFile), "requeued")
	t.Cleanup(func() { _ = os.WriteFile(goFile, nil, 0o600) }) // a failed run leaves no loop behind

	var out, errOut lockedBuffer
	logs := exec.Command(filepath.Join(binDir, "coordinator"), "--addr", "http://"+addr, "--token", token, "job", "logs", "-f", string(id))
	logs.Stdout, logs.Stderr = &out, &errOut
	require.NoError(t, logs.Start())
	followed := make(chan error, 1)
	go func() { followed <- logs.Wait() }()
	t.Cleanup(func() { _ = logs.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "start ") }, 30*time.Second, 50*time.Millisecond)

	dev.interrupt(t)
	require.Contains(t, dev.out.String(), `msg="requeued the work this server ran: it runs again when a coordinator schedules" tasks=1`)
	startDevAt(t, addr, tmp, args...)
	require.Eventually(t, func() bool { return strings.Count(out.String(), "start ") == 2 }, 30*time.Second, 50*time.Millisecond,
		"job logs -f follows the next attempt; stdout: %q; stderr: %s", out.String(), errOut.String())
	require.NoError(t, os.WriteFile(goFile, nil, 0o600))
	select {
	case err := <-followed:
		require.NoError(t, err, "stderr: %s", errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("job logs -f did not return; stderr: %s", errOut.String())
	}
	m := regexp.MustCompile(`^start (\S+)\ngot TERM\n(?:atom: the coordinator stopped the task: [^\n]*\n)?start (\S+)\ndone\n$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "each attempt's output from its start to its end, the first's last line written as it was stopped: %q", out.String())
	assert.NotEqual(t, m[1], m[2])
	// While no dev answers, the wait says so once per outage; those lines
	// may fall anywhere between the notices.
	notices := regexp.MustCompile(`(?m)^coordinator: (cannot reach the coordinator|lost the output stream from the coordinator) at [^\n]* until it answers\n`).ReplaceAllString(errOut.String(), "")
	assert.Regexp(t, `(?m)^--- the job was requeued; (waiting for attempt 2 to be placed \(\w+\); Ctrl-C stops waiting\n--- )?following attempt 2 \(task `+regexp.QuoteMeta(m[2])+`\)$`, notices, errOut.String())
	st, err := c.Job(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobSucceeded, st.Job.State, st.Job.Reason)
}
