package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/test/testlog"
)

// devCLI starts a coordinator dev daemon (tasks run bare, as local
// processes) and returns a function that runs the CLI against it as its
// admin, with stdout and stderr apart.
func devCLI(t *testing.T) func(stdout, stderr io.Writer, args ...string) error {
	t.Helper()
	const token = "dev-token-0123456789abcdef"
	tf, err := api.ParseTokens([]byte("users: [{name: dev, token: " + token + ", admin: true}]\n"))
	require.NoError(t, err)
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tf, Cluster: cluster, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 20 * time.Millisecond, StopGrace: 2 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return func(stdout, stderr io.Writer, args ...string) error {
		app := App()
		app.Writer, app.ErrWriter = stdout, stderr
		return app.RunContext(context.Background(), append([]string{"coordinator", "--addr", d.URL, "--token", token}, args...))
	}
}

// TestLogsFollowWaitsForThePlacement: `job logs -f ID` right after `job
// submit`, before the job has a task, waits for it (saying so on stderr)
// and then streams the task's output until it ends; it failed with "job
// has 0 tasks: pick one with --task" (found by a new user). A job of two
// replicas, or a service, has each live replica followed, each line
// prefixed with its task, and a replica placed again followed in its
// turn (it offered dead tasks), unless it is an MPI job (its launcher's
// is followed); a job that ended before it ran says there is nothing to
// follow.
func TestLogsFollowWaitsForThePlacement(t *testing.T) {
	cli := devCLI(t)
	var out bytes.Buffer
	submit := func(spec string) string {
		t.Helper()
		out.Reset()
		var err error
		require.Eventually(t, func() bool { // the cluster config lands just after start
			out.Reset()
			err = cli(&out, io.Discard, "job", "submit", "-f", file(t, spec))
			return err == nil
		}, 10*time.Second, 20*time.Millisecond, "%v", err)
		f := strings.Fields(out.String())
		require.Len(t, f, 4, out.String())
		return f[1]
	}

	// A selector no node matches yet keeps the job pending until cpu-1 is
	// tagged.
	id := submit("kind: command\nname: hello\nselector: ready=yes\ncommand: [sh, -c, 'echo one; echo two >&2']\nresources: {cpu: 1}\n")
	var stdout, stderr testlog.Buffer
	done := make(chan error, 1)
	go func() { done <- cli(&stdout, &stderr, "job", "logs", "-f", "--interval", "10ms", id) }()
	require.Eventually(t, func() bool { return stderr.String() != "" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "waiting for job "+id+" to be placed (Pending); Ctrl-C stops waiting\n", stderr.String())
	require.NoError(t, cli(io.Discard, io.Discard, "node", "set", "-f",
		file(t, `{name: cpu-1, cpu: "64", memory: 256Gi, tags: {ready: "yes"}}`)))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("job logs -f did not end with its task")
	}
	assert.Equal(t, "one\ntwo\n", stdout.String())

	// Two replicas, none placed: waited for like one; cancelled before
	// it ran, nothing to follow.
	two := submit("kind: command\nname: pair\nreplicas: 2\nselector: never=yes\ncommand: [echo]\nresources: {cpu: 1}\n")
	stderr = testlog.Buffer{}
	go func() { done <- cli(io.Discard, &stderr, "job", "logs", "-f", "--interval", "10ms", two) }()
	require.Eventually(t, func() bool { return stderr.String() != "" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "waiting for job "+two+" to be placed (Pending); Ctrl-C stops waiting\n", stderr.String())
	require.NoError(t, cli(io.Discard, io.Discard, "job", "cancel", two))
	err := <-done
	require.Error(t, err)
	assert.Equal(t, "job "+two+" is Cancelled and never ran a task: there is no output to follow", err.Error())
	lone := submit("kind: command\nname: lone\nselector: never=yes\ncommand: [echo]\nresources: {cpu: 1}\n")
	require.NoError(t, cli(io.Discard, io.Discard, "job", "cancel", lone))
	err = cli(io.Discard, io.Discard, "job", "logs", "-f", lone)
	require.Error(t, err)
	assert.Equal(t, "job "+lone+" is Cancelled and never ran a task: there is no output to follow", err.Error())

	// Two replicas placed: both followed, each line saying its task,
	// until the job ends.
	pair := submit("kind: command\nname: pair2\nreplicas: 2\ncommand: [sh, -c, 'echo replica $ATOM_REPLICA; exec sleep 60']\nresources: {cpu: 1}\n")
	stdout = testlog.Buffer{}
	go func() { done <- cli(&stdout, io.Discard, "job", "logs", "-f", "--interval", "10ms", pair) }()
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Regexp(t, `^(\[`+pair+`-0-\w+\] replica 0\n\[`+pair+`-1-\w+\] replica 1\n|\[`+pair+`-1-\w+\] replica 1\n\[`+pair+`-0-\w+\] replica 0\n)$`, stdout.String())
	require.NoError(t, cli(io.Discard, io.Discard, "job", "cancel", pair))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("job logs -f did not end with the job")
	}
	require.NoError(t, cli(io.Discard, io.Discard, "job", "logs", "--task", "1", pair), "a replica index names its task")
	// Once its tasks have stopped, there is nothing to follow.
	err = cli(io.Discard, io.Discard, "job", "logs", "-f", pair)
	require.Error(t, err)
	assert.Equal(t, "job "+pair+" is Cancelled: none of its tasks runs, so there is nothing to follow: coordinator job logs "+pair+" shows their output", err.Error())

	// A service's replica that exits is placed again: the follower goes
	// on with the new task, not the dead one.
	dir := t.TempDir()
	svc := submit("kind: service\nname: flaky\ncommand: [sh, -c, 'echo up $ATOM_TASK_ID; [ -e " + dir + "/again ] && exec sleep 60; " +
		"until [ -e " + dir + "/go ]; do sleep 0.01; done; : > " + dir + "/again; exit 3']\nresources: {cpu: 1}\n")
	stdout = testlog.Buffer{}
	go func() { done <- cli(&stdout, io.Discard, "job", "logs", "-f", "--interval", "10ms", svc) }()
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") == 2 }, 10*time.Second, 10*time.Millisecond)
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	for _, l := range lines {
		task, rest, ok := strings.Cut(strings.TrimPrefix(l, "["), "] ")
		require.True(t, ok, l)
		assert.Equal(t, "up "+task, rest, "each line says its task")
	}
	assert.NotEqual(t, lines[0][:strings.Index(lines[0], "]")], lines[1][:strings.Index(lines[1], "]")], "the new replica's task")
	require.NoError(t, cli(io.Discard, io.Discard, "job", "cancel", svc))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("job logs -f did not end with the service")
	}

	// An MPI job: its launcher, replica 0, carries every rank's output.
	// (Run bare here: each replica runs the command.)
	mpi := submit("kind: mpi\nname: ranks\nreplicas: 2\ncommand: [sh, -c, 'echo replica $ATOM_REPLICA']\nresources: {cpu: 1}\n")
	stdout = testlog.Buffer{}
	require.NoError(t, cli(&stdout, io.Discard, "job", "logs", "-f", "--interval", "10ms", mpi))
	assert.Equal(t, "replica 0\n", stdout.String())
}

// TestLogsFollowGoesOnToTheNextAttempt: `job logs -f ID` of a job run
// again after its task ended (here its restart policy, after a failure)
// exited 0 at the first task's end, as if the job had ended. Now it says
// so on stderr and follows the next attempt's task from its start, until
// the job ends; a job that has ended is followed to its end as before.
func TestLogsFollowGoesOnToTheNextAttempt(t *testing.T) {
	cli := devCLI(t)
	dir := t.TempDir()
	spec := file(t, "kind: command\nname: again\nrestartPolicy: OnFailure\ncommand: [sh, -c, 'echo run $ATOM_TASK_ID; [ -e "+dir+"/again ] && exit 0; "+
		"until [ -e "+dir+"/go ]; do sleep 0.01; done; : > "+dir+"/again; exit 3']\nresources: {cpu: 1}\n")
	var out bytes.Buffer
	require.Eventually(t, func() bool { // the cluster config lands just after start
		out.Reset()
		return cli(&out, io.Discard, "job", "submit", "-f", spec) == nil
	}, 10*time.Second, 20*time.Millisecond)
	id := strings.Fields(out.String())[1]
	var stdout, stderr testlog.Buffer
	done := make(chan error, 1)
	go func() { done <- cli(&stdout, &stderr, "job", "logs", "-f", "--interval", "10ms", id) }()
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "\n") }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	select {
	case err := <-done:
		require.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("job logs -f did not end with the job")
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 2, "both attempts' output: %q; stderr: %s", stdout.String(), stderr.String())
	first, second := strings.TrimPrefix(lines[0], "run "), strings.TrimPrefix(lines[1], "run ")
	assert.NotEqual(t, first, second)
	// Said on one line, or two when it waited for the placement (as it
	// may have for the first).
	assert.Regexp(t, `^(waiting for job `+id+` to be placed \(Pending\); Ctrl-C stops waiting\n)?--- the job was restarted; (waiting for attempt 2 to be placed \(\w+\); Ctrl-C stops waiting\n--- )?following attempt 2 \(task `+second+`\)\n$`, stderr.String())

	out.Reset()
	require.NoError(t, cli(&out, io.Discard, "job", "logs", "-f", id), "an ended job's output, to its end")
	assert.Equal(t, "run "+second+"\n", out.String())
}

// TestLogsFollowNamesTheReplicasNextAttempt: `job logs -f ID` of a job
// of two replicas follows both, and once the job is restarted (one
// replica failed), both of its next attempt, saying on stderr which
// attempt that is, counted from 1 as job status and job events count.
func TestLogsFollowNamesTheReplicasNextAttempt(t *testing.T) {
	cli := devCLI(t)
	dir := t.TempDir()
	spec := file(t, "kind: command\nname: pair\nreplicas: 2\nrestartPolicy: OnFailure\ncommand: [sh, -c, 'echo run $ATOM_TASK_ID; [ -e "+dir+"/again ] && exit 0; "+
		"until [ -e "+dir+"/go ]; do sleep 0.01; done; [ $ATOM_REPLICA = 1 ] && : > "+dir+"/again && exit 3; exec sleep 30']\nresources: {cpu: 1}\n")
	var out bytes.Buffer
	require.Eventually(t, func() bool { // the cluster config lands just after start
		out.Reset()
		return cli(&out, io.Discard, "job", "submit", "-f", spec) == nil
	}, 10*time.Second, 20*time.Millisecond)
	id := strings.Fields(out.String())[1]
	var stdout, stderr testlog.Buffer
	done := make(chan error, 1)
	go func() { done <- cli(&stdout, &stderr, "job", "logs", "-f", "--interval", "10ms", id) }()
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") == 2 }, 10*time.Second, 10*time.Millisecond, "both replicas followed")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	select {
	case err := <-done:
		require.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("job logs -f did not end with the job")
	}
	assert.Regexp(t, `^(\[`+id+`-[01]-\w+\] run `+id+`-[01]-\w+\n){4}$`, stdout.String())
	assert.Regexp(t, `^(waiting for job `+id+` to be placed \(Pending\); Ctrl-C stops waiting\n)?--- the job was restarted; following attempt 2\n$`, stderr.String())
}

// An edge job on the dev cluster's edge node gets its boards in
// ATOM_DEVICES, and node list shows them held.
func TestEdgeJobDevices(t *testing.T) {
	cli := devCLI(t)
	var out bytes.Buffer
	spec := file(t, "kind: command\nname: flash\ncommand: [sh, -c, 'echo boards $ATOM_DEVICES; exec sleep 30']\nresources: {cpu: 1, devices: {jetson-xavier: 2}}\n")
	require.Eventually(t, func() bool { // the cluster config lands just after start
		out.Reset()
		return cli(&out, io.Discard, "job", "submit", "-f", spec) == nil
	}, 10*time.Second, 20*time.Millisecond)
	id := strings.Fields(out.String())[1]
	require.Eventually(t, func() bool {
		out.Reset()
		return cli(&out, io.Discard, "job", "logs", id) == nil && strings.Contains(out.String(), "boards")
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, "boards jetson-xavier:0,jetson-xavier:1\n", out.String())
	out.Reset()
	require.NoError(t, cli(&out, io.Discard, "node", "list"))
	assert.Regexp(t, `edge-1 .* jetson-xavier 2/2 `, out.String())
	require.NoError(t, cli(io.Discard, io.Discard, "job", "cancel", id))
}
