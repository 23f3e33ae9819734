// Package local is the coordinator's local backend: every task runs as a real
// process on this machine (in the full system, the atom agent binary), with its
// own working directory under Config.Dir.
//
// Task lifecycle (one per TaskID for the life of a Backend):
//
//	        Start                      leader exits
//	(none) ───────► running ───────────────────────────► exited
//	  │            (Started)                             (Exited)
//	  │ cannot        │ Stop: SIGTERM to the leader,         ▲
//	  │ start         │       SIGKILL to the group           │ leader exits
//	  ▼               ▼       after the grace                │
//	failed         stopping ─────────────────────────────────┘
//	(StartFailed)
//
// A task that started emits Started and later exactly one Exited; a task that
// could not start emits StartFailed only; a task adopted from an earlier
// backend (see Adopt) emits AdoptedEnded only, when it ends. The task's
// first process is the leader of its own process group. Stop (and Close)
// signal as Kubernetes stops a container: SIGTERM to the leader only (the
// atom agent, which passes it on to its job, or a bare command), so that
// each process gets it once, from its parent; then, if the leader still
// lives after the grace, SIGKILL to the whole group. When the leader exits,
// for whatever reason, whatever it left behind in its process group is
// killed, as when PID 1 of a container exits.
//
// The package needs Unix process groups; it is built and tested on Linux.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is the stop grace used when Config.Grace is zero: the time
// between SIGTERM to the leader and SIGKILL to the group.
const DefaultGrace = 10 * time.Second

// defaultPath is the child's PATH when the coordinator itself has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// logName is the file, inside a task's directory, that receives the task's
// stdout and stderr.
const logName = "output.log"

// Errors returned by the Backend; callers branch with errors.Is.
var (
	// ErrClosed: the backend was closed and starts nothing more.
	ErrClosed = errors.New("local backend closed")
	// ErrInvalidLaunch: the Launch cannot describe a task (bad ID, empty
	// command, malformed environment). Retrying it will not help.
	ErrInvalidLaunch = errors.New("invalid launch")
)

// Launch describes one task to run.
type Launch struct {
	// TaskID names the task; it is also the name of the task's directory, so
	// it must be a single path element (no "/", not "." or "..").
	TaskID string
	// JobID is the job the task belongs to; informational here.
	JobID string
	// Attempt counts the task's tries, from 0; informational here.
	Attempt int
	// Command is the program and its arguments. A program name without "/"
	// is looked up in the child's PATH (Env may override PATH); a relative
	// path with "/" is relative to the task's directory.
	Command []string
	// Env is added to the base environment (PATH, HOME, TMPDIR) and wins
	// over it.
	Env map[string]string
}

// EventKind says what happened to a task.
type EventKind int

// Event kinds.
const (
	// EventKindStarted: the task's process is running; Event.PID is set.
	EventKindStarted EventKind = iota + 1
	// EventKindExited: the task's process ended; Event.ExitCode is set, and
	// Event.Signal when a signal ended it.
	EventKindExited
	// EventKindStartFailed: the task could not start; Event.Err says why.
	// No Exited follows.
	EventKindStartFailed
	// EventKindAdoptedEnded: an adopted task (see Backend.Adopt) ended;
	// Event.PID is set. It has no exit status (the process was no child
	// of this one): under atom, the task reported its end itself. It
	// comes once, and only for an adopted task, which has no other.
	EventKindAdoptedEnded
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventKindStarted:
		return "started"
	case EventKindExited:
		return "exited"
	case EventKindStartFailed:
		return "start-failed"
	case EventKindAdoptedEnded:
		return "adopted-ended"
	default:
		return fmt.Sprintf("EventKind(%d)", int(k))
	}
}

// Event reports a change of one task. For a given task, Started comes before
// Exited, and each kind comes at most once.
type Event struct {
	TaskID string
	Kind   EventKind
	// PID is the process ID of the task's leader (Started and Exited).
	PID int
	// ExitCode is the leader's exit status (Exited). When a signal ended
	// it, ExitCode is 128 + the signal number, as a shell reports it.
	ExitCode int
	// Signal names the signal that ended the leader, without the "SIG"
	// prefix ("TERM", "KILL"); empty after a normal exit (Exited).
	Signal string
	// Err is why the task could not start (StartFailed), or why its status
	// could not be read (Exited, rare); empty otherwise.
	Err string
	// Time is when the backend saw the change, from Config.Clock.
	Time time.Time
	// Stopped is set on Exited when the task had been asked to stop
	// (Stop, Close) before it ended: its exit status is the stop's.
	Stopped bool
}

// Config configures a Backend.
type Config struct {
	// Dir is the base directory; each task works in Dir/tasks/<TaskID>,
	// which also holds its output.log and its tmp. Required; created if
	// missing. Its length does not matter: see RunDir.
	Dir string
	// RunDir is where the backend makes its directory of short paths:
	// each task's TMPDIR is a link there (RunDir/atom-NNN/N) to the
	// task's tmp, so the Unix sockets its programs make in TMPDIR (the
	// job-type plugin's, mpirun's) stay within the 108 bytes a socket
	// path may have, however long Dir and the task ID are. Default:
	// $TMPDIR when it is at most 40 bytes long, else /tmp. New removes
	// the directories there of backends whose process is gone (killed
	// before Close).
	RunDir string
	// Clock stamps events; time.Now when nil. Stop's grace is measured by
	// real timers regardless.
	Clock func() time.Time
	// Grace is the time between SIGTERM (to the leader) and SIGKILL (to
	// the group) used by Close and by Stop with a grace of zero or less;
	// DefaultGrace (10s) when zero.
	Grace time.Duration
}

// Backend runs tasks as local processes. Its methods are safe for concurrent
// use.
type Backend struct {
	tasksDir string // absolute Dir/tasks
	runDir   string // this backend's own directory of TMPDIR links; removed by Close
	clock    func() time.Time
	grace    time.Duration
	queue    *eventQueue

	// wg counts reaper and escalation goroutines; Close waits on it.
	wg sync.WaitGroup

	mu     sync.Mutex
	closed bool             // guarded by mu
	tasks  map[string]*task // guarded by mu; every TaskID ever started
	links  uint64           // guarded by mu; TMPDIR links made so far
}

// task is the backend's record of one TaskID. Fields other than pid are
// guarded by Backend.mu.
type task struct {
	// pid is the leader's PID, which is also its process group ID; 0 if the
	// task failed to start. Set before the reaper starts, then read-only.
	pid int

	// running: the leader has not exited. While it is true the leader is
	// not reaped, so pid (and the group ID) cannot be reused and signals to
	// it or its group reach only this task.
	running bool
	// termSent: Stop already sent SIGTERM.
	termSent bool
	// killAt: the earliest pending SIGKILL; zero if none is pending.
	killAt time.Time
	// done is closed when running becomes false.
	done chan struct{}
	// tmpLink is the task's TMPDIR, a link to its tmp in its directory;
	// removed when the leader exits.
	tmpLink string
}

// New creates a Backend rooted at cfg.Dir.
func New(cfg Config) (*Backend, error) {
	if cfg.Dir == "" {
		return nil, errors.New("new local backend: empty Dir")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("new local backend: resolve dir %q: %w", cfg.Dir, err)
	}
	tasksDir := filepath.Join(dir, "tasks")
	if err := os.MkdirAll(tasksDir, 0o750); err != nil {
		return nil, fmt.Errorf("new local backend: %w", err)
	}
	base := cfg.RunDir
	if base == "" {
		base = os.TempDir()
		if len(base) > maxRunBase {
			base = "/tmp"
		}
	}
	runDir, err := makeRunDir(base)
	if err != nil {
		return nil, fmt.Errorf("new local backend: make its directory for the tasks' TMPDIR: %w", err)
	}
	b := &Backend{
		tasksDir: tasksDir,
		runDir:   runDir,
		clock:    cfg.Clock,
		grace:    cfg.Grace,
		queue:    newEventQueue(),
		tasks:    make(map[string]*task),
	}
	if b.clock == nil {
		b.clock = time.Now
	}
	if b.grace <= 0 {
		b.grace = DefaultGrace
	}
	return b, nil
}

// Events returns the channel of task events. It is the same channel on every
// call; events are queued without bound, so a slow reader never holds up
// the backend. After Close, the channel yields the remaining events and is
// then closed; drain it to the end so that its delivery goroutine exits.
func (b *Backend) Events() <-chan Event { return b.queue.out }

// Start runs the task described by l, unless it was already started: Start is
// idempotent per TaskID for the life of the Backend, whatever became of the
// first run. It returns once the process is running (Started is queued) or
// has failed to start (StartFailed is queued, and Start returns nil: the
// event is the one report of that failure). It returns an error only when
// ctx is done, the backend is closed, or l is invalid (ErrInvalidLaunch).
// ctx bounds the call, not the task.
func (b *Backend) Start(ctx context.Context, l Launch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start task %s: %w", l.TaskID, err)
	}
	if err := validate(l); err != nil {
		return fmt.Errorf("start task %s: %w", l.TaskID, err)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("start task %s: %w", l.TaskID, ErrClosed)
	}
	if _, ok := b.tasks[l.TaskID]; ok {
		return nil
	}
	t := &task{done: make(chan struct{})}
	b.tasks[l.TaskID] = t

	cmd, log, err := b.prepare(l, t)
	if err == nil {
		err = cmd.Start()
		// The child has its own descriptor; ours has nothing buffered.
		_ = log.Close()
	}
	if err != nil {
		close(t.done)
		b.removeLink(t)
		b.queue.push(Event{TaskID: l.TaskID, Kind: EventKindStartFailed, Err: err.Error(), Time: b.clock()})
		return nil
	}

	t.pid = cmd.Process.Pid
	t.running = true
	writeLeader(cmd.Dir, t.pid)
	b.queue.push(Event{TaskID: l.TaskID, Kind: EventKindStarted, PID: t.pid, Time: b.clock()})
	b.wg.Add(1)
	go b.reap(l.TaskID, t, cmd)
	return nil
}

// prepare creates the task's directory, its TMPDIR link and its log and
// builds its command; the caller closes the log after starting the
// command. On error nothing is left open. Called with b.mu held.
func (b *Backend) prepare(l Launch, t *task) (*exec.Cmd, *os.File, error) {
	dir := filepath.Join(b.tasksDir, l.TaskID)
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return nil, nil, fmt.Errorf("create task dir: %w", err)
	}
	b.links++
	link := filepath.Join(b.runDir, strconv.FormatUint(b.links, 36))
	if err := os.Symlink(tmp, link); err != nil {
		return nil, nil, fmt.Errorf("link the task's TMPDIR: %w", err)
	}
	t.tmpLink = link
	env := map[string]string{
		"PATH":   os.Getenv("PATH"),
		"HOME":   dir,
		"TMPDIR": link,
	}
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	for k, v := range l.Env {
		env[k] = v
	}
	path, err := lookPath(l.Command[0], env["PATH"], dir)
	if err != nil {
		return nil, nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	return &exec.Cmd{
		Path: path,
		Args: slices.Clone(l.Command),
		Env:  environ(env),
		Dir:  dir,
		// An *os.File is handed to the child as is: no copying goroutine,
		// and Wait does not wait for descendants that keep it open.
		Stdout:      log,
		Stderr:      log,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}, log, nil
}

// reap waits for the task's leader to exit, kills what it left in its group,
// reaps it and queues Exited.
func (b *Backend) reap(id string, t *task, cmd *exec.Cmd) {
	defer b.wg.Done()

	// 1. Wait until the leader is a zombie, without reaping it: the zombie
	// keeps its PID, so no signal to its group can reach a recycled PID.
	// Where that wait is not available, reap first and accept the window.
	var err error
	reaped := false
	if waitExited(t.pid) != nil {
		err, reaped = cmd.Wait(), true
	}

	// 2. Mark it ended and kill the rest of its group.
	b.mu.Lock()
	t.running = false
	stopped := t.termSent
	close(t.done)
	_ = syscall.Kill(-t.pid, syscall.SIGKILL) // ESRCH: nothing was left
	b.removeLink(t)
	_ = os.Remove(filepath.Join(cmd.Dir, leaderFile))
	b.mu.Unlock()

	// 3. Reap and report.
	if !reaped {
		err = cmd.Wait()
	}
	ev := Event{TaskID: id, Kind: EventKindExited, PID: t.pid, ExitCode: -1, Stopped: stopped}
	if ws, ok := waitStatus(cmd); ok {
		if ws.Signaled() {
			ev.Signal = signalName(ws.Signal())
			ev.ExitCode = 128 + int(ws.Signal())
		} else {
			ev.ExitCode = ws.ExitStatus()
		}
	} else {
		ev.Err = fmt.Sprintf("wait for pid %d: %v", t.pid, err)
	}
	ev.Time = b.clock()
	b.queue.push(ev)
}

func waitStatus(cmd *exec.Cmd) (syscall.WaitStatus, bool) {
	if cmd.ProcessState == nil {
		return 0, false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, ok
}

// Stop stops the task: SIGTERM to its leader now (not to the rest of its
// group: the leader passes it on as it sees fit), SIGKILL to the whole group
// if the leader is still alive after grace (Config.Grace when grace is zero
// or less). It does not wait; the task's Exited event reports the end, once.
// Stopping an unknown, failed or ended task does nothing. A second Stop
// sends no second SIGTERM but may bring the SIGKILL forward.
func (b *Backend) Stop(taskID string, grace time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tasks[taskID]
	if !ok || !t.running {
		return nil
	}
	if err := b.stopLocked(t, grace); err != nil {
		return fmt.Errorf("stop task %s: %w", taskID, err)
	}
	return nil
}

// stopLocked signals a running task and schedules its SIGKILL. Called with
// b.mu held and t.running true, so the reaper has not yet called wg.Done and
// wg.Add here is safe even while Close waits.
func (b *Backend) stopLocked(t *task, grace time.Duration) error {
	if grace <= 0 {
		grace = b.grace
	}
	if !t.termSent {
		t.termSent = true
		// The leader only: its children get TERM from it (atom forwards
		// it to the job), never a second one from here.
		if err := syscall.Kill(t.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("send SIGTERM to pid %d: %w", t.pid, err)
		}
	}
	at := time.Now().Add(grace)
	if !t.killAt.IsZero() && !at.Before(t.killAt) {
		return nil
	}
	t.killAt = at
	b.wg.Add(1)
	go b.killAfter(t, grace)
	return nil
}

// killAfter sends SIGKILL to the task's group after d unless it ended first.
func (b *Backend) killAfter(t *task, d time.Duration) {
	defer b.wg.Done()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.done:
		return
	case <-timer.C:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.running {
		_ = syscall.Kill(-t.pid, syscall.SIGKILL) // only fails if already gone
	}
}

// Started reports whether Start has run task taskID, whatever became of
// it (a later Start of it does nothing).
func (b *Backend) Started(taskID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.tasks[taskID]
	return ok
}

// Running returns the IDs of the tasks whose leader is alive, sorted.
func (b *Backend) Running() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for id, t := range b.tasks {
		if t.running {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// LogPath returns the file receiving the task's stdout and stderr,
// Dir/tasks/<taskID>/output.log, whether or not the task exists; "" when
// taskID cannot name a task.
func (b *Backend) LogPath(taskID string) string {
	if validTaskID(taskID) != nil {
		return ""
	}
	return filepath.Join(b.tasksDir, taskID, logName)
}

// Close stops every running task as Stop does, with Config.Grace (SIGTERM
// to each leader, SIGKILL to the group of each leader still alive after
// it), waits until all have exited and their Exited events are queued, and
// then ends the event stream (see Events). Start fails with ErrClosed afterwards. Close may be called
// more than once.
func (b *Backend) Close() {
	b.mu.Lock()
	b.closed = true
	for _, t := range b.tasks {
		if t.running {
			// Only EPERM can fail here; the SIGKILL after the grace is
			// still scheduled and wg.Wait below waits for the exit.
			_ = b.stopLocked(t, b.grace)
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
	_ = os.RemoveAll(b.runDir) // links only: their targets stay
	b.queue.close()
}

// maxRunBase is the longest $TMPDIR the backend makes its directory of
// TMPDIR links in (else /tmp): with the link's own name ("atom-"+10
// digits, a short one per task) TMPDIR stays within 40+25 bytes, which
// leaves room in a socket path's 108 for the names programs choose.
const maxRunBase = 40

// removeLink removes the task's TMPDIR link. Called with b.mu held.
func (b *Backend) removeLink(t *task) {
	if t.tmpLink != "" {
		_ = os.Remove(t.tmpLink)
	}
}

func validate(l Launch) error {
	if err := validTaskID(l.TaskID); err != nil {
		return err
	}
	if len(l.Command) == 0 || l.Command[0] == "" {
		return fmt.Errorf("empty command: %w", ErrInvalidLaunch)
	}
	for k, v := range l.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %q: %w", k, ErrInvalidLaunch)
		}
	}
	return nil
}

func validTaskID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return fmt.Errorf("task ID %q is not a single path element: %w", id, ErrInvalidLaunch)
	}
	return nil
}

// environ renders env as sorted KEY=value pairs.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// lookPath finds file in path, the child's PATH, as a shell would; a name
// with "/" is returned as is. Unlike exec.LookPath, it searches the child's
// PATH rather than the coordinator's, and resolves relative PATH entries
// against dir, the child's working directory.
func lookPath(file, path, dir string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d) // "" is the working directory
		}
		p := filepath.Join(d, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("look up %q in PATH %q: %w", file, path, exec.ErrNotFound)
}
