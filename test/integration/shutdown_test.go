package integration

import (
	"context"
	"fmt"
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
	"github.com/atom-sched/atom/pkg/wire"
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

// devProc is a `coordinator dev` process a test runs.
type devProc struct {
	addr   string
	cmd    *exec.Cmd
	out    *strings.Builder
	exited chan error
}

// startDev runs `coordinator dev` with the test's token and TMPDIR tmp,
// args added (--data-dir ...), and waits until it serves.
func startDev(t *testing.T, tmp string, args ...string) *devProc {
	t.Helper()
	return startDevAt(t, freePort(t), tmp, args...)
}

// startDevAt is startDev with the API at addr.
func startDevAt(t *testing.T, addr, tmp string, args ...string) *devProc {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, []byte("users:\n  - {name: dev, token: "+token+", admin: true}\n"), 0o600))
	d := &devProc{addr: addr, out: &strings.Builder{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(binDir, "coordinator"), append([]string{"dev", "--http-addr", d.addr, "--tokens", tokens, "--heartbeat-ttl", "3s"}, args...)...)
	d.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	require.NoError(t, d.cmd.Start())
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("coordinator dev's output:\n%s", d.out.String())
		}
	})
	c := client.New("http://"+d.addr, token)
	require.Eventually(t, func() bool {
		_, err := c.Nodes(context.Background())
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "coordinator dev serves")
	return d
}

// interrupt sends dev SIGINT (Ctrl-C) and waits for it to exit 0.
func (d *devProc) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-d.exited:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("coordinator dev did not exit")
	}
	d.exited <- nil // for the cleanup
}

// submitWhenReady submits spec once the cluster config is in.
func submitWhenReady(t *testing.T, c *client.Client, spec, req string) structs.JobID {
	t.Helper()
	var id structs.JobID
	require.Eventually(t, func() bool {
		r, err := c.SubmitJob(context.Background(), []byte(spec), req)
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	return id
}

// TestDevInterruptStopsTasksAtOnce: Ctrl-C on coordinator dev stops its
// tasks with SIGTERM; a task that exits on it has its end reported and
// is not SIGKILLed after the grace; dev then removes the data directory
// it made, and nothing of it is left in the temporary directory.
func TestDevInterruptStopsTasksAtOnce(t *testing.T) {
	tmp := t.TempDir()
	dev := startDev(t, tmp)
	c := client.New("http://"+dev.addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 4000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	svc := submitWhenReady(t, c, "kind: service\nname: interrupted\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "interrupted")
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, svc)
		return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 1
	}, 30*time.Second, 50*time.Millisecond)

	dev.interrupt(t)
	log := dev.out.String()
	assert.Regexp(t, regexp.MustCompile(`msg="task process stopped" task=interrupted-\S+ pid=\d+ exitCode=143 signal=""`), log,
		"atom ended on the SIGTERM, with its job's status")
	assert.NotContains(t, log, "signal=KILL")
	assert.Regexp(t, `coordinator dev: removed its data in `+regexp.QuoteMeta(tmp)+`/atom-dev-\d+ \(give --data-dir to keep it\)`, log)
	// It said so at start, and its shutdown did not promise the jobs a
	// future.
	assert.Regexp(t, `coordinator dev: data in `+regexp.QuoteMeta(tmp)+`/atom-dev-\d+ is temporary: deleted with its jobs when dev exits \(--data-dir DIR keeps it\)\n`, log)
	assert.Contains(t, log, `msg="stopped the work this server ran: its jobs are deleted with the temporary data dir (--data-dir keeps them)" tasks=1`)
	assert.NotContains(t, log, "runs again")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "dev leaves nothing in the temporary directory")
	assert.Zero(t, processes(t, marker))
}

// TestDevInterruptRequeues: Ctrl-C on coordinator dev while a batch job
// and a service run puts them back: the batch job is Pending again (not
// Failed, as when its atom took the SIGTERM for one from outside), the
// service's replica is to be placed again, and nothing is placed while
// dev shuts down. The next coordinator dev on the same data directory
// runs both again.
func TestDevInterruptRequeues(t *testing.T) {
	tmp, data := t.TempDir(), t.TempDir()
	dev := startDev(t, tmp, "--data-dir", data)
	c := client.New("http://"+dev.addr, token)
	ctx := context.Background()
	marker := fmt.Sprintf("sleep %d", 5000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { killMarked(marker) })
	batch := submitWhenReady(t, c, "kind: command\nname: batch\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "batch")
	svc := submitWhenReady(t, c, "kind: service\nname: svc\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n", "svc")
	require.Eventually(t, func() bool {
		b, err := c.Job(ctx, batch)
		s, err2 := c.Job(ctx, svc)
		return err == nil && err2 == nil && b.Job.State == structs.JobRunning && s.Job.State == structs.JobRunning && processes(t, marker) == 2
	}, 30*time.Second, 50*time.Millisecond)

	dev.interrupt(t)
	assert.NotContains(t, dev.out.String(), "signal=KILL")
	assert.Contains(t, dev.out.String(), "coordinator dev: data in "+data+"\n")
	assert.Contains(t, dev.out.String(), `msg="requeued the work this server ran: it runs again when a coordinator schedules" tasks=2`)
	assert.Zero(t, processes(t, marker))

	dev = startDev(t, tmp, "--data-dir", data)
	c = client.New("http://"+dev.addr, token)
	for _, id := range []structs.JobID{batch, svc} {
		var st *wire.JobStatus
		require.Eventually(t, func() bool {
			var err error
			st, err = c.Job(ctx, id)
			return err == nil && st.Job.State == structs.JobRunning && processes(t, marker) == 2
		}, 30*time.Second, 50*time.Millisecond, "%s runs again", id)
		require.Len(t, st.Tasks, 2, "%s: the stopped task and the one now running; none placed during the shutdown", id)
		first, now := st.Tasks[0], st.Tasks[1]
		if first.State == structs.TaskRunning {
			first, now = now, first
		}
		assert.Equal(t, structs.TaskStopped, first.State, id)
		assert.Equal(t, structs.StopShutdown, first.StopReason, id)
		assert.Equal(t, "stopped: coordinator shutting down", first.Message, id)
		assert.Equal(t, structs.TaskRunning, now.State, id)
	}
	b, err := c.Job(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, 1, b.Job.Attempt, "the batch job runs as its second attempt")
	assert.Zero(t, b.Job.Restarts(), "not a restart")
	ev, err := c.JobEvents(ctx, batch, client.EventQuery{})
	require.NoError(t, err)
	var kinds []structs.EventType
	for _, e := range ev.Events {
		kinds = append(kinds, e.Type)
		if e.Type == structs.EventRequeued {
			assert.Equal(t, "pending again as attempt 2: "+structs.ShutdownMessage, e.Message)
		}
	}
	assert.Equal(t, []structs.EventType{structs.EventSubmitted, structs.EventPlaced, structs.EventStarted, structs.EventRunning,
		structs.EventStopped, structs.EventRequeued, structs.EventPlaced, structs.EventStarted, structs.EventRunning}, kinds,
		"stopped and requeued, not restarted")
}
