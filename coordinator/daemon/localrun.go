package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/atom-sched/atom/coordinator/taskenv"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// LocalBackend runs tasks as local processes (coordinator/local) for the
// server, and reports for them: Started is Running, an exit is Succeeded
// or Failed with its code, and a live process is a heartbeat. Until the
// atom agent runs inside each task (and heartbeats itself), the process's
// own life is its liveness.
type LocalBackend struct {
	run   *local.Backend
	sink  backend.EventSink
	addr  string // the coordinators' HTTP addresses tasks are told (comma-separated)
	atom  string // the atom binary to run commands under; "" runs them bare
	every time.Duration
	log   *slog.Logger

	// Simulate: nodes' accelerators are simulated (atom checks the
	// allocation against them, not NVML); Faults are their faults by
	// node. Set before the first Start.
	Simulate bool
	Faults   map[string]string
	// PluginDir, if set, is the directory of job-type plugins atom looks
	// in (tasks get it as ATOM_PLUGIN_DIR). Set before the first Start.
	PluginDir string
	// Grace, if set, is the grace atom gives the job when the coordinator
	// stops the task (atom run --grace): the same as Stop's, so that the
	// job gets SIGKILL after the grace however it learns of the stop.
	// Set before the first Start.
	Grace time.Duration
	// CA, if set, is the PEM text of the CA that signed the coordinators'
	// HTTPS certificates (tasks get it as ATOM_TLS_CA). Set before the
	// first Start.
	CA string
	// Configs, if set, returns a task's atom configs and secrets with
	// their data (taskenv.Configs over the server's state and keyring).
	// Set before the first Start.
	Configs func(t *structs.Task, j *structs.Job) ([]taskenv.Config, error)
	// StopAfterDisconnect, if set, is how long atom runs a task on when
	// no server answers its heartbeats (ATOM_STOP_AFTER_DISCONNECT): a
	// task outlives the server that started it while another server
	// answers, not the last one. Set before the first Start.
	StopAfterDisconnect time.Duration

	mu     sync.Mutex
	tokens map[structs.TaskID]string
	// left: the tasks whose atom may have left an unsent report, to send
	// on once their process has ended: those an earlier run of the
	// server left (adopted, or ended while no server ran), and those
	// whose report could not be sent yet.
	left map[string]bool
	done chan struct{}
	wg   sync.WaitGroup
}

// NewLocalBackend starts the reporting loops over run. httpAddrs are the
// URLs of every coordinator server, this one first, comma-separated. With
// atom set, each command runs under `atom run`, which heartbeats for
// itself to any of them, so tasks outlive the server that started them.
// every is the heartbeat period (a third of the heartbeat TTL).
func NewLocalBackend(run *local.Backend, sink backend.EventSink, httpAddrs, atom string, every time.Duration, log *slog.Logger) *LocalBackend {
	b := &LocalBackend{run: run, sink: sink, addr: httpAddrs, atom: atom, every: every, log: log,
		tokens: map[structs.TaskID]string{}, left: map[string]bool{}, done: make(chan struct{})}
	ids, err := run.TaskDirs()
	if err != nil {
		log.Warn("cannot list task directories for the reports their tasks left", "err", err)
	}
	for _, id := range ids {
		b.left[id] = true
	}
	b.wg.Add(2)
	go b.pump()
	go b.beat()
	return b
}

// stateReader is the server's replicated state.
type stateReader interface {
	Read(fn func(*state.State))
}

// Start launches task's process: the job's command and args, its env, and
// atom's ATOM_* variables. Under atom (`atom run [-- CMD ARGS...]`), the
// job's type decides what runs, so a job without a command is atom's to
// refuse or complete (a spark job's plugin builds spark-submit); without
// atom, the command is all there is and a job without one fails here.
// Starting a started task does nothing. The launch's cluster gives the
// cache's Redis (ATOM_CACHE_REDIS and the like).
func (b *LocalBackend) Start(l backend.Launch) error {
	t, j, token := l.Task, l.Job, l.Token
	if b.run.Started(string(t.ID)) {
		return nil // and its configs stay as its process has them
	}
	cmd := append(append([]string(nil), j.Command...), j.Args...)
	b.mu.Lock()
	b.tokens[t.ID] = token
	b.mu.Unlock()
	if b.atom != "" {
		run := []string{b.atom, "run"}
		if b.Grace > 0 {
			run = append(run, "--grace", b.Grace.String())
		}
		if len(cmd) > 0 {
			run = append(run, "--")
		}
		cmd = append(run, cmd...)
	} else if len(cmd) == 0 {
		return b.report(t.ID, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 127,
			Message: "the job has no command: give command (and args) in its spec (without atom, the local backend runs the command as is)"})
	}
	env := map[string]string{}
	if b.Configs != nil && len(t.Configs) > 0 {
		// The job's env, then atom's, win over a config's keys.
		cfgs, err := b.Configs(t, j)
		if err == nil {
			err = writeConfigs(b.configsDir(t.ID), cfgs, env)
		}
		if err != nil {
			_ = removeConfigs(b.configsDir(t.ID))
			return b.report(t.ID, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 127, Message: "configs: " + err.Error()})
		}
	}
	for k, v := range j.Env {
		env[k] = v
	}
	for k, v := range taskenv.Env(t, j, b.addr, token) {
		env[k] = v
	}
	for k, v := range taskenv.TLS(b.CA) {
		env[k] = v
	}
	if l.Cluster != nil {
		redis := l.Cluster.Redis
		for k, v := range taskenv.CacheEnv(j, redis) {
			env[k] = v
		}
		if redis != "" && j.CacheMountPath != "" {
			// Every task of this host mounts its own cache: under its
			// own directory, not the job's mountPath (atom tells the
			// job where: ATOM_CACHE_DIR).
			env["ATOM_CACHE_MOUNT"] = filepath.Join(filepath.Dir(b.run.LogPath(string(t.ID))), "cache")
		}
	}
	env["ATOM_HEARTBEAT"] = b.every.String()
	env["ATOM_UNSENT_REPORT"] = unsentPath(b.run, string(t.ID))
	if b.StopAfterDisconnect > 0 {
		env["ATOM_STOP_AFTER_DISCONNECT"] = b.StopAfterDisconnect.String()
	}
	if b.PluginDir != "" {
		env["ATOM_PLUGIN_DIR"] = b.PluginDir
	}
	// A local process sees the machine's GPUs (or, simulated, none): atom
	// checks only the allocated ones, real or simulated.
	if !b.Simulate {
		env["ATOM_HOST_GPUS"] = "true"
	} else {
		env["ATOM_SIMULATED_GPUS"] = "true"
		if f := b.Faults[string(t.Node)]; f != "" {
			env["ATOM_SIMULATED_GPU_FAULTS"] = f
		}
	}
	if spec, err := json.Marshal(taskenv.JobSpec(j)); err == nil {
		env["ATOM_JOB_SPEC"] = string(spec)
	}
	err := b.run.Start(context.Background(), local.Launch{TaskID: string(t.ID), JobID: string(j.ID), Attempt: t.Attempt, Command: cmd, Env: env})
	if err != nil {
		_ = removeConfigs(b.configsDir(t.ID))
	}
	if errors.Is(err, local.ErrClosed) {
		return fmt.Errorf("%w: %w", backend.ErrClosed, err)
	}
	return err
}

// Capabilities: none beyond Start and Stop; a task is a process of the
// server that placed it, which no other server sees.
func (b *LocalBackend) Capabilities() backend.Capabilities { return backend.Capabilities{} }

// Stop stops task h.Task's process: SIGTERM to its first process (atom,
// or the bare command), then SIGKILL to all of its processes after
// h.Grace.
func (b *LocalBackend) Stop(h backend.Halt) error {
	return b.run.Stop(string(h.Task), h.Grace)
}

// configsDir is where task id's mounted configs and secrets are.
func (b *LocalBackend) configsDir(id structs.TaskID) string { return configsDir(b.run, string(id)) }

// Close stops every process and the reporting loops.
func (b *LocalBackend) Close() {
	close(b.done)
	b.run.Close()
	b.wg.Wait()
}

func (b *LocalBackend) token(id structs.TaskID) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens[id]
}

func (b *LocalBackend) report(id structs.TaskID, ev structs.TaskEvent) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := b.sink.Report(id, b.token(id), ev); err != nil {
		return fmt.Errorf("report task %s %s: %w", id, ev.State, err)
	}
	return nil
}

// pump turns process events into task reports.
func (b *LocalBackend) pump() {
	defer b.wg.Done()
	for e := range b.run.Events() {
		id := structs.TaskID(e.TaskID)
		ev := structs.TaskEvent{Time: e.Time}
		switch e.Kind {
		case local.EventKindStarted:
			ev.State = structs.TaskRunning
		case local.EventKindExited:
			ev.State, ev.ExitCode = structs.TaskSucceeded, e.ExitCode
			if e.ExitCode != 0 {
				ev.State = structs.TaskFailed
				if e.Signal != "" {
					ev.Message = "killed by SIG" + e.Signal
				}
				msg := "task process failed"
				if e.Stopped {
					msg = "task process stopped" // as asked: its status is the stop's
				}
				b.log.Info(msg, "task", id, "pid", e.PID, "exitCode", e.ExitCode, "signal", e.Signal)
			}
		case local.EventKindStartFailed:
			ev.State, ev.ExitCode, ev.Message = structs.TaskFailed, 127, e.Err
		case local.EventKindAdoptedEnded:
			// An earlier run of the server started it, and its atom
			// reported its end (or left the report, which sendLeft
			// sends on): only its configs are left to go. The earlier
			// run, killed, left them mounted.
			if err := removeConfigs(b.configsDir(id)); err != nil {
				b.log.Warn("task configs not removed", "task", id, "err", err)
			}
			continue
		default:
			continue
		}
		if ev.State != structs.TaskRunning {
			// Its configs go with it, as a Pod's volumes do; its output stays.
			if err := removeConfigs(b.configsDir(id)); err != nil {
				b.log.Warn("task configs not removed", "task", id, "err", err)
			}
		}
		// Its atom's own report of an exit, which no server took in
		// time, says more than the exit status: it goes instead.
		if e.Kind != local.EventKindExited || !b.takeUnsent(e.TaskID) {
			if err := b.report(id, ev); errors.Is(err, server.ErrTaskEnded) {
				// atom reported the end itself, just before it exited.
				b.log.Debug("task report after its end", "task", id, "err", err)
			} else if err != nil {
				b.log.Warn("task report failed", "task", id, "err", err)
			}
		}
		if ev.State != structs.TaskRunning {
			b.mu.Lock()
			delete(b.tokens, id)
			b.mu.Unlock()
		}
	}
}

// beat heartbeats every live process.
func (b *LocalBackend) beat() {
	defer b.wg.Done()
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
		}
		b.sendLeft()
		for _, id := range b.run.Running() {
			if b.token(structs.TaskID(id)) == "" {
				continue // adopted (an earlier run started it): its atom heartbeats
			}
			if err := b.report(structs.TaskID(id), structs.TaskEvent{}); err != nil {
				b.log.Debug("heartbeat failed", "task", id, "err", err)
			}
		}
	}
}

// takeUnsent sends on the report task id's atom left, if it left one,
// or keeps it in left to try again; it reports whether there was one.
func (b *LocalBackend) takeUnsent(id string) bool {
	if _, ok, _ := unsent(b.run, id); !ok {
		return false
	}
	if !b.sendUnsent(id) {
		b.mu.Lock()
		b.left[id] = true
		b.mu.Unlock()
	}
	return true
}

// sendLeft sends on the unsent reports of the tasks in left whose process
// has ended, and forgets those with nothing (more) to send.
func (b *LocalBackend) sendLeft() {
	b.mu.Lock()
	ids := slices.Sorted(maps.Keys(b.left))
	b.mu.Unlock()
	running := b.run.Running()
	for _, id := range ids {
		if slices.Contains(running, id) || !b.sendUnsent(id) {
			continue // adopted and still running, or not sent yet
		}
		b.mu.Lock()
		delete(b.left, id)
		b.mu.Unlock()
	}
}
