package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// killMarked kills, by PID, the processes whose command line starts with
// marker: what a failed test left running.
func killMarked(marker string) {
	out, _ := exec.Command("pgrep", "-f", "^"+marker).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestOrphansStopWithTheLastServer: the leader of three servers is
// killed with kill -9 while it runs a service's tasks under atom; they
// run on, reporting to the other servers. When those shut down too, no
// coordinator is left: atom stops each task a heartbeat TTL later
// instead of running it for ever.
func TestOrphansStopWithTheLastServer(t *testing.T) {
	servers := startCluster(t)
	lead := leader(t, servers)
	var others []*srv
	for _, s := range servers {
		if s != lead {
			others = append(others, s)
		}
	}
	c := client.New(others[0].url, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 3000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	svc, err := c.SubmitJob(ctx, []byte("kind: service\nname: orphans\nreplicas: 2\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n"), "orphans")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, svc.JobID)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 2
	}, 30*time.Second, 50*time.Millisecond)

	require.NoError(t, lead.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = lead.cmd.Process.Wait()
	// The tasks report to the other servers (TestTasksSurviveLeaderKill):
	// still running two TTLs on.
	require.Never(t, func() bool { return processes(t, marker) != 2 }, 6*time.Second, 100*time.Millisecond, "the tasks outlive the server that started them")
	for _, s := range others {
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
		_, _ = s.cmd.Process.Wait()
	}
	require.Eventually(t, func() bool { return processes(t, marker) == 0 }, 30*time.Second, 100*time.Millisecond,
		"with no server left, atom stops the tasks")
}

// TestDevInterruptStopsTasksAtOnce: Ctrl-C on coordinator dev stops its
// tasks with SIGTERM; a task that exits on it has its end reported and
// is not SIGKILLed after the grace; dev then removes the data directory
// it made, and nothing of it is left in the temporary directory.
func TestDevInterruptStopsTasksAtOnce(t *testing.T) {
	tmp := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users:\n  - {name: dev, token: "+token+", admin: true}\n"), 0o600))
	dev := exec.Command(filepath.Join(binDir, "coordinator"), "dev", "--http-addr", addr, "--tokens", tokens, "--heartbeat-ttl", "3s")
	dev.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out strings.Builder
	dev.Stdout, dev.Stderr = &out, &out
	require.NoError(t, dev.Start())
	exited := make(chan error, 1)
	go func() { exited <- dev.Wait() }()
	t.Cleanup(func() {
		_ = dev.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("coordinator dev's output:\n%s", out.String())
		}
	})
	c := client.New("http://"+addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 4000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	var svc structs.JobID
	require.Eventually(t, func() bool {
		r, err := c.SubmitJob(ctx, []byte("kind: service\nname: interrupted\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n"), "interrupted")
		if err == nil {
			svc = r.JobID
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, svc)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond)

	require.NoError(t, dev.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("coordinator dev did not exit")
	}
	exited <- nil // for the cleanup
	log := out.String()
	assert.Regexp(t, regexp.MustCompile(`msg="task process failed" task=interrupted-\S+ pid=\d+ exitCode=143 signal=""`), log,
		"atom ended on the SIGTERM, with its job's status")
	assert.NotContains(t, log, "signal=KILL")
	assert.Regexp(t, `coordinator dev: removed its data in `+regexp.QuoteMeta(tmp)+`/atom-dev-\d+ \(give --data-dir to keep it\)`, log)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "dev leaves nothing in the temporary directory")
	assert.Zero(t, processes(t, marker))
}
