package local_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/local"
)

// TestMain doubles as a task's program: with LOCAL_TEST_BIND set it
// listens on a Unix socket of that name in $TMPDIR, as a plugin does.
func TestMain(m *testing.M) {
	if name := os.Getenv("LOCAL_TEST_BIND"); name != "" {
		ln, err := net.Listen("unix", filepath.Join(os.TempDir(), name))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("listening on", ln.Addr())
		ln.Close()
		os.Exit(0)
	}
	if id := os.Getenv("LOCAL_TEST_START"); id != "" {
		// A coordinator that starts a task and is killed (kill -9).
		b, err := local.New(local.Config{Dir: os.Getenv("LOCAL_TEST_DIR")})
		if err == nil {
			err = b.Start(context.Background(), local.Launch{TaskID: id, JobID: "job", Command: sh("exec sleep 300")})
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {}
	}
	if base := os.Getenv("LOCAL_TEST_OWN_RUNDIR"); base != "" {
		// A coordinator that is killed (kill -9) with its backend open.
		b, err := local.New(local.Config{Dir: os.Getenv("LOCAL_TEST_DIR"), RunDir: base})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		_ = b
		fmt.Println("ready")
		select {}
	}
	os.Exit(m.Run())
}

// waitFor bounds every wait on a process or an event.
const waitFor = 5 * time.Second

// tick is the polling period of require.Eventually.
const tick = 5 * time.Millisecond

// newBackend returns a backend in a fresh directory, closed and drained at
// the end of the test.
func newBackend(t *testing.T, cfg local.Config) *local.Backend {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	b, err := local.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		b.Close()
		for range b.Events() {
		}
	})
	return b
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func start(t *testing.T, b *local.Backend, id string, command []string) {
	t.Helper()
	require.NoError(t, b.Start(context.Background(), local.Launch{TaskID: id, JobID: "job", Command: command}))
}

// nextEvent returns the next event, failing the test after waitFor.
func nextEvent(t *testing.T, b *local.Backend) local.Event {
	t.Helper()
	select {
	case ev, ok := <-b.Events():
		require.True(t, ok, "event stream closed")
		return ev
	case <-time.After(waitFor):
		require.FailNow(t, "no event within "+waitFor.String())
		return local.Event{}
	}
}

// waitEvent returns the next event of the given task and kind, skipping
// others.
func waitEvent(t *testing.T, b *local.Backend, id string, kind local.EventKind) local.Event {
	t.Helper()
	for {
		ev := nextEvent(t, b)
		if ev.TaskID == id && ev.Kind == kind {
			return ev
		}
	}
}

// waitExits waits for the Exited events of all the given tasks, in any
// order, and returns them by task.
func waitExits(t *testing.T, b *local.Backend, ids ...string) map[string]local.Event {
	t.Helper()
	exits := make(map[string]local.Event)
	for len(exits) < len(ids) {
		ev := nextEvent(t, b)
		if ev.Kind == local.EventKindExited && slices.Contains(ids, ev.TaskID) {
			exits[ev.TaskID] = ev
		}
	}
	return exits
}

// closeAndDrain closes b and returns every event left in its stream.
func closeAndDrain(t *testing.T, b *local.Backend) []local.Event {
	t.Helper()
	b.Close()
	var evs []local.Event
	timeout := time.After(waitFor)
	for {
		select {
		case ev, ok := <-b.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			require.FailNow(t, "event stream not closed after Close")
		}
	}
}

func readLog(t *testing.T, b *local.Backend, id string) string {
	t.Helper()
	data, err := os.ReadFile(b.LogPath(id))
	require.NoError(t, err)
	return string(data)
}

// waitLog waits until the task's log contains s.
func waitLog(t *testing.T, b *local.Backend, id, s string) {
	t.Helper()
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(b.LogPath(id))
		return err == nil && strings.Contains(string(data), s)
	}, waitFor, tick, "log of %s never contained %q", id, s)
}

// readPID reads a PID the task wrote into file name in its directory.
func readPID(t *testing.T, b *local.Backend, id, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(b.LogPath(id)), name))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	return pid
}

// gone reports whether pid has ended; a zombie counts as ended, since the
// test process may run where nobody reaps orphans.
func gone(pid int) bool {
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) state ...; comm may hold spaces, so cut at the last ')'.
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] == 'Z'
		}
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func kinds(evs []local.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.TaskID+":"+ev.Kind.String())
	}
	return out
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		code int
	}{
		{"success", 0},
		{"failure", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, local.Config{Clock: func() time.Time { return now }})
			start(t, b, "t1", sh(fmt.Sprintf("exit %d", tc.code)))

			started := nextEvent(t, b)
			assert.Equal(t, local.EventKindStarted, started.Kind)
			assert.Equal(t, "t1", started.TaskID)
			assert.Positive(t, started.PID)
			assert.Equal(t, now, started.Time)

			exited := nextEvent(t, b)
			assert.Equal(t, local.EventKindExited, exited.Kind)
			assert.Equal(t, tc.code, exited.ExitCode)
			assert.Empty(t, exited.Signal)
			assert.Empty(t, exited.Err)
			assert.Equal(t, started.PID, exited.PID)
			assert.Equal(t, now, exited.Time)
			assert.False(t, exited.Stopped, "it ended by itself")
			assert.Empty(t, b.Running())
		})
	}
}

func TestOutputGoesToLog(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh("echo to-stdout; echo to-stderr >&2"))
	waitEvent(t, b, "t1", local.EventKindExited)

	assert.Equal(t, filepath.Join("tasks", "t1", "output.log"), relToBase(t, b, b.LogPath("t1")))
	assert.Equal(t, "to-stdout\nto-stderr\n", readLog(t, b, "t1"))
}

// relToBase returns p relative to the backend's base directory, two levels
// above a task directory.
func relToBase(t *testing.T, b *local.Backend, p string) string {
	t.Helper()
	base := filepath.Dir(filepath.Dir(filepath.Dir(p)))
	rel, err := filepath.Rel(base, p)
	require.NoError(t, err)
	return rel
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	require.NoError(t, b.Start(context.Background(), local.Launch{
		TaskID:  "t1",
		Command: sh(`echo "greeting=$GREETING home=$HOME tmp=$(cd "$TMPDIR" && pwd -P)"; test -d "$TMPDIR" && echo tmp-exists; env | cut -d= -f1 | sort | tr '\n' ' '`),
		Env:     map[string]string{"GREETING": "hello world"},
	}))
	require.Zero(t, waitEvent(t, b, "t1", local.EventKindExited).ExitCode)

	dir := filepath.Dir(b.LogPath("t1"))
	lines := strings.Split(strings.TrimSpace(readLog(t, b, "t1")), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, fmt.Sprintf("greeting=hello world home=%s tmp=%s", dir, filepath.Join(dir, "tmp")), lines[0])
	assert.Equal(t, "tmp-exists", lines[1])
	// Nothing of the test process leaks in: only the base, Env, and what
	// sh itself exports.
	allowed := []string{"GREETING", "HOME", "OLDPWD", "PATH", "PWD", "SHLVL", "TMPDIR", "_"}
	for _, k := range strings.Fields(lines[2]) {
		assert.Contains(t, allowed, k)
	}
}

// TestShortTMPDIR: however long the base directory and the task ID, a
// task's TMPDIR is short enough for Unix sockets (whose paths may have
// 108 bytes), and it is the task's own tmp, in its directory; the link
// goes when the task ends, the backend's directory of links with Close.
func TestShortTMPDIR(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-base-directory/", 15))
	b, err := local.New(local.Config{Dir: dir})
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	id := strings.Repeat("a-job-name-of-sixty-three-characters-", 2)[:63] + "-0-ab12"
	name := "plugin1234567890" // go-plugin's: "plugin" and os.CreateTemp's digits
	require.NoError(t, b.Start(context.Background(), local.Launch{TaskID: id, Command: []string{self},
		Env: map[string]string{"LOCAL_TEST_BIND": name}}))
	started := waitEvent(t, b, id, local.EventKindStarted)
	ev := waitEvent(t, b, id, local.EventKindExited)
	log := readLog(t, b, id)
	require.Zero(t, ev.ExitCode, log)
	link := strings.TrimSpace(strings.TrimPrefix(log, "listening on "))
	link = filepath.Dir(link)
	assert.LessOrEqual(t, len(link), 65, "TMPDIR %s", link)
	_, err = os.Lstat(link)
	assert.ErrorIs(t, err, os.ErrNotExist, "the link goes with the task (pid %d)", started.PID)
	fi, err := os.Stat(filepath.Join(filepath.Dir(b.LogPath(id)), "tmp"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	b.Close()
	for range b.Events() {
	}
	_, err = os.Lstat(filepath.Dir(link))
	assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the directory of links")
}

func TestEnvOverridesBase(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	bin := t.TempDir()
	script := filepath.Join(bin, "hello-task")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"home=$HOME\"\n"), 0o755))

	// The program is looked up in the child's PATH, not the test's.
	require.NoError(t, b.Start(context.Background(), local.Launch{
		TaskID:  "t1",
		Command: []string{"hello-task"},
		Env:     map[string]string{"PATH": bin + ":/usr/bin:/bin", "HOME": "/elsewhere"},
	}))
	require.Zero(t, waitEvent(t, b, "t1", local.EventKindExited).ExitCode)
	assert.Equal(t, "home=/elsewhere\n", readLog(t, b, "t1"))
}

func TestWorkingDirPerTask(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	for _, id := range []string{"a", "b"} {
		start(t, b, id, sh("pwd; echo "+id+" > marker"))
	}
	waitExits(t, b, "a", "b")
	for _, id := range []string{"a", "b"} {
		dir, err := filepath.EvalSymlinks(filepath.Dir(b.LogPath(id)))
		require.NoError(t, err)
		assert.Equal(t, dir+"\n", readLog(t, b, id))
		marker, err := os.ReadFile(filepath.Join(dir, "marker"))
		require.NoError(t, err)
		assert.Equal(t, id+"\n", string(marker))
	}
}

func TestRelativeCommandIsInTaskDir(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	dir := filepath.Dir(b.LogPath("t1"))
	require.NoError(t, os.MkdirAll(dir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho relative\n"), 0o755))

	start(t, b, "t1", []string{"./run.sh"})
	require.Zero(t, waitEvent(t, b, "t1", local.EventKindExited).ExitCode)
	assert.Equal(t, "relative\n", readLog(t, b, "t1"))
}

func TestStartTwiceRunsOnce(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	cmd := sh("echo run >> runs")

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			assert.NoError(t, b.Start(context.Background(), local.Launch{TaskID: "t1", Command: cmd}))
		})
	}
	wg.Wait()
	assert.Equal(t, local.EventKindStarted, nextEvent(t, b).Kind)
	assert.Equal(t, local.EventKindExited, nextEvent(t, b).Kind)
	// Still a no-op once the task has ended.
	start(t, b, "t1", cmd)

	evs := closeAndDrain(t, b)
	assert.Empty(t, evs, "only one Started and one Exited in all")
	runs, err := os.ReadFile(filepath.Join(filepath.Dir(b.LogPath("t1")), "runs"))
	require.NoError(t, err)
	assert.Equal(t, "run\n", string(runs))
}

func TestStopTrappedTermExitsZero(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh(`trap 'echo got-term; exit 0' TERM; sleep 1000 & echo ready; wait`))
	waitLog(t, b, "t1", "ready")
	assert.Equal(t, []string{"t1"}, b.Running())

	require.NoError(t, b.Stop("t1", 10*time.Second))
	exited := waitEvent(t, b, "t1", local.EventKindExited)
	assert.Zero(t, exited.ExitCode)
	assert.Empty(t, exited.Signal)
	assert.Contains(t, readLog(t, b, "t1"), "got-term")
	assert.Empty(t, b.Running())
}

func TestStopIgnoredTermKillsAfterGrace(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	// The ignored TERM is inherited by sleep too.
	start(t, b, "t1", sh(`trap '' TERM; echo ready; sleep 1000`))
	waitLog(t, b, "t1", "ready")

	const grace = 200 * time.Millisecond
	stopped := time.Now()
	require.NoError(t, b.Stop("t1", grace))
	exited := waitEvent(t, b, "t1", local.EventKindExited)
	assert.GreaterOrEqual(t, time.Since(stopped), grace)
	assert.Equal(t, "KILL", exited.Signal)
	assert.Equal(t, 128+int(syscall.SIGKILL), exited.ExitCode)
	assert.True(t, exited.Stopped, "it ended because it was stopped")
}

// TestStopEndsChildrenWithTheLeader: a child that does not trap TERM
// still ends when the leader does, which TERM ends.
func TestStopEndsChildrenWithTheLeader(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh(`sleep 1000 & echo $! > child.pid; echo ready; wait`))
	waitLog(t, b, "t1", "ready")
	child := readPID(t, b, "t1", "child.pid")
	require.False(t, gone(child))

	require.NoError(t, b.Stop("t1", 10*time.Second))
	exited := waitEvent(t, b, "t1", local.EventKindExited)
	assert.Equal(t, "TERM", exited.Signal)
	require.Eventually(t, func() bool { return gone(child) }, waitFor, tick, "child %d survived", child)
}

// leaderOnly is a task whose child would say so if it got SIGTERM; the
// leader, when it gets SIGTERM, tells the child to finish (as atom passes
// TERM on to its job) and waits for it.
const leaderOnly = `(trap 'echo child-got-term; exit 0' TERM; while [ ! -e stop ]; do sleep 0.01; done; echo child-saw-stop) &
trap 'echo leader-got-term; touch stop' TERM
echo ready
wait
wait
echo leader-done`

// assertLeaderOnly checks the log of a leaderOnly task that was stopped:
// the leader got SIGTERM once, its child none, and both finished.
func assertLeaderOnly(t *testing.T, b *local.Backend, id string, exited local.Event) {
	t.Helper()
	log := readLog(t, b, id)
	assert.Zero(t, exited.ExitCode, log)
	assert.Empty(t, exited.Signal, log)
	assert.Equal(t, 1, strings.Count(log, "leader-got-term"), log)
	assert.NotContains(t, log, "child-got-term", "SIGTERM reached the leader's child directly")
	assert.Contains(t, log, "child-saw-stop")
	assert.Contains(t, log, "leader-done")
}

// TestStopSignalsOnlyTheLeader is Kubernetes' contract: SIGTERM goes to the
// task's first process (atom, or a bare command) only, so a job under atom
// gets it once, from atom, not a second time from the process group.
func TestStopSignalsOnlyTheLeader(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh(leaderOnly))
	waitLog(t, b, "t1", "ready")

	require.NoError(t, b.Stop("t1", time.Minute))
	assertLeaderOnly(t, b, "t1", waitEvent(t, b, "t1", local.EventKindExited))
}

// TestStopKillsTheGroupAfterGrace: once the grace is over, SIGKILL goes
// to the whole group, so a child that ignores TERM is not waited for.
func TestStopKillsTheGroupAfterGrace(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh(`trap '' TERM; sleep 1000 & echo $! > child.pid; echo ready; wait`))
	waitLog(t, b, "t1", "ready")
	child := readPID(t, b, "t1", "child.pid")

	require.NoError(t, b.Stop("t1", 100*time.Millisecond))
	exited := waitEvent(t, b, "t1", local.EventKindExited)
	assert.Equal(t, "KILL", exited.Signal)
	require.Eventually(t, func() bool { return gone(child) }, waitFor, tick, "child %d survived", child)
}

func TestLeftoversDieWithLeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script string
		stop   bool
	}{
		// The leader exits on its own and leaves a child behind.
		{"leader exits", `sleep 1000 & echo $! > child.pid; echo ready`, false},
		// TERM ends the leader; the child ignores it and is killed when
		// the leader is gone, before the grace runs out.
		{"child ignores TERM", `(trap '' TERM; exec sleep 1000) & echo $! > child.pid; echo ready; wait`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, local.Config{})
			start(t, b, "t1", sh(tc.script))
			waitLog(t, b, "t1", "ready")
			child := readPID(t, b, "t1", "child.pid")
			if tc.stop {
				require.NoError(t, b.Stop("t1", time.Hour))
			}
			waitEvent(t, b, "t1", local.EventKindExited)
			require.Eventually(t, func() bool { return gone(child) }, waitFor, tick, "child %d survived", child)
		})
	}
}

func TestStartFailed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		command []string
		errText string
	}{
		{"missing path", []string{"/nonexistent/atom-agent"}, "no such file or directory"},
		{"missing in PATH", []string{"no-such-atom-binary"}, "not found"},
		{"not executable", []string{"./not-executable"}, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, local.Config{})
			dir := filepath.Dir(b.LogPath("t1"))
			require.NoError(t, os.MkdirAll(dir, 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "not-executable"), []byte("data\n"), 0o644))

			start(t, b, "t1", tc.command)
			ev := nextEvent(t, b)
			assert.Equal(t, local.EventKindStartFailed, ev.Kind)
			assert.Equal(t, "t1", ev.TaskID)
			assert.Contains(t, ev.Err, tc.errText)
			assert.Empty(t, b.Running())
			require.NoError(t, b.Stop("t1", time.Second))
			// Idempotent: no second try, no second event.
			start(t, b, "t1", tc.command)
			assert.Empty(t, closeAndDrain(t, b))
		})
	}
}

func TestStopIsNoOpWhenNothingRuns(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	require.NoError(t, b.Stop("unknown", time.Second))

	start(t, b, "t1", sh("exit 0"))
	waitEvent(t, b, "t1", local.EventKindExited)
	require.NoError(t, b.Stop("t1", time.Second))
	assert.Empty(t, closeAndDrain(t, b))
}

func TestConcurrentStopsExitOnce(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	start(t, b, "t1", sh(`trap '' TERM; echo ready; sleep 1000`))
	waitLog(t, b, "t1", "ready")

	var wg sync.WaitGroup
	for i := range 8 {
		// Later calls shorten the grace; the shortest one wins.
		wg.Go(func() { assert.NoError(t, b.Stop("t1", time.Duration(8-i)*50*time.Millisecond)) })
	}
	wg.Wait()
	exited := waitEvent(t, b, "t1", local.EventKindExited)
	assert.Equal(t, "KILL", exited.Signal)
	assert.Empty(t, closeAndDrain(t, b))
}

func TestCloseStopsAll(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{Grace: 200 * time.Millisecond})
	ids := []string{"a", "b", "c"}
	start(t, b, "a", sh("echo ready; exec sleep 1000"))
	start(t, b, "b", sh(`trap 'exit 0' TERM; echo ready; sleep 1000 & wait`))
	start(t, b, "c", sh(`trap '' TERM; echo ready; sleep 1000`))
	for _, id := range ids {
		waitLog(t, b, id, "ready")
	}
	require.Equal(t, ids, b.Running())

	evs := closeAndDrain(t, b)
	assert.Empty(t, b.Running())
	exits := map[string]local.Event{}
	for _, ev := range evs {
		if ev.Kind == local.EventKindExited {
			exits[ev.TaskID] = ev
		}
	}
	assert.ElementsMatch(t, []string{"a:started", "b:started", "c:started", "a:exited", "b:exited", "c:exited"}, kinds(evs))
	assert.Equal(t, "TERM", exits["a"].Signal)
	assert.Equal(t, 0, exits["b"].ExitCode)
	assert.Empty(t, exits["b"].Signal)
	assert.Equal(t, "KILL", exits["c"].Signal)

	err := b.Start(context.Background(), local.Launch{TaskID: "d", Command: sh("exit 0")})
	require.ErrorIs(t, err, local.ErrClosed)
	b.Close() // twice is fine
}

// TestCloseSignalsOnlyTheLeaders: Close stops tasks as Stop does.
func TestCloseSignalsOnlyTheLeaders(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{Grace: time.Minute})
	start(t, b, "t1", sh(leaderOnly))
	waitLog(t, b, "t1", "ready")

	var exited local.Event
	for _, ev := range closeAndDrain(t, b) {
		if ev.Kind == local.EventKindExited {
			exited = ev
		}
	}
	require.Equal(t, local.EventKindExited, exited.Kind)
	assertLeaderOnly(t, b, "t1", exited)
}

func TestStartRejects(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{})
	for _, tc := range []struct {
		name   string
		launch local.Launch
	}{
		{"empty ID", local.Launch{Command: sh("true")}},
		{"dot dot", local.Launch{TaskID: "..", Command: sh("true")}},
		{"slash", local.Launch{TaskID: "a/b", Command: sh("true")}},
		{"no command", local.Launch{TaskID: "t1"}},
		{"empty program", local.Launch{TaskID: "t1", Command: []string{""}}},
		{"bad env key", local.Launch{TaskID: "t1", Command: sh("true"), Env: map[string]string{"A=B": "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, b.Start(context.Background(), tc.launch), local.ErrInvalidLaunch)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Start(ctx, local.Launch{TaskID: "t1", Command: sh("true")}), context.Canceled)
	assert.Empty(t, b.LogPath("../x"))
	assert.Empty(t, closeAndDrain(t, b))
}

func TestNewNeedsDir(t *testing.T) {
	t.Parallel()
	_, err := local.New(local.Config{})
	require.Error(t, err)
}

func TestRunningIsSorted(t *testing.T) {
	t.Parallel()
	b := newBackend(t, local.Config{Grace: 100 * time.Millisecond})
	ids := []string{"c", "a", "b"}
	for _, id := range ids {
		start(t, b, id, sh("echo ready; exec sleep 1000"))
	}
	for _, id := range ids {
		waitLog(t, b, id, "ready")
	}
	assert.True(t, slices.IsSorted(b.Running()))
	assert.Len(t, b.Running(), 3)
}

// TestNoGoroutineLeft is not parallel: the parallel tests are paused while
// it runs, so every goroutine of the package seen here is this backend's.
func TestNoGoroutineLeft(t *testing.T) {
	b, err := local.New(local.Config{Dir: t.TempDir(), Grace: 50 * time.Millisecond})
	require.NoError(t, err)
	start(t, b, "exits", sh("exit 0"))
	start(t, b, "fails", []string{"/nonexistent"})
	start(t, b, "stopped", sh("echo ready; exec sleep 1000"))
	start(t, b, "killed", sh(`trap '' TERM; echo ready; sleep 1000`))
	waitLog(t, b, "stopped", "ready")
	waitLog(t, b, "killed", "ready")
	require.NoError(t, b.Stop("stopped", time.Hour))
	require.NoError(t, b.Stop("killed", time.Hour))
	require.Contains(t, allStacks(), "/coordinator/local.(*Backend).reap", "the check below can see the backend's goroutines")
	assert.Len(t, closeAndDrain(t, b), 7) // 3 started + 3 exited + 1 start-failed
	var stacks string
	assert.Eventually(t, func() bool {
		stacks = allStacks()
		return !strings.Contains(stacks, "/coordinator/local.")
	}, waitFor, tick)
	assert.NotContains(t, stacks, "/coordinator/local.", "goroutines of the backend left after Close")
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
