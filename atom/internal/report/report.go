// Package report sends atom's heartbeats and final status to the
// coordinator (POST /v1/tasks/{id}/heartbeat with the allocation token).
//
// A coordinator that is away (no answer, 503, a leader election) is
// retried with backoff and does not stop the job; the coordinator saying
// the task has ended (409) or must stop (state Stopping) does, and so,
// when Reporter.StopAfterDisconnect is set, does no server answering at
// all for that long.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// StopError is the coordinator asking atom to stop its job, or
// (Disconnected) no coordinator server left to ask.
type StopError struct {
	Reason string
	// Disconnected: no server answered for StopAfterDisconnect; a final
	// report is not worth a long wait.
	Disconnected bool
}

func (e *StopError) Error() string {
	if e.Disconnected {
		return e.Reason
	}
	return "the coordinator stopped the task: " + e.Reason
}

// Reporter reports on one task. It knows every coordinator server it was
// given and moves to the next one when a report fails, so a task outlives
// the server that started it.
type Reporter struct {
	clients []*client.Client
	cur     int // index of the server reports go to now
	client  *client.Client
	task    structs.TaskID
	token   string
	every   time.Duration
	log     *slog.Logger
	kick    chan struct{} // capacity 1: beat now (a new endpoint)
	notices chan Notice   // capacity 1: the preemption notice, sent once
	noticed bool

	// StopAfterDisconnect, when above 0, stops the job once no server has
	// answered a heartbeat (any HTTP answer counts, a 503 included) for
	// this long: every server refuses connections or none is reachable,
	// so no coordinator is left to stop it. Set before Run. The local
	// backend sets it (its tasks do not outlive every server); 0 rides
	// out any outage (a Kubernetes Pod waits for its coordinator).
	StopAfterDisconnect time.Duration
	// Unsent, if set, is the file a final report goes to when no
	// coordinator took it in time (every server down): the local backend
	// sets it in the task's directory and hands the report on once a
	// server is back. Set before the final report.
	Unsent string

	mu       sync.Mutex // guards endpoint
	endpoint string
}

// New returns a reporter for task at the coordinator addrs (one URL, or
// several separated by commas: every server of the cluster), heartbeating
// every period. It retries on its own schedule, so its clients do not.
func New(addrs string, task structs.TaskID, token string, every time.Duration, log *slog.Logger) *Reporter {
	r := &Reporter{task: task, token: token, every: every, log: log, kick: make(chan struct{}, 1), notices: make(chan Notice, 1)}
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		c := client.New(a, "")
		c.Retries = 0
		c.HTTP = httpClientFor(every) // bounded requests: a hung coordinator is a failed beat
		r.clients = append(r.clients, c)
	}
	if len(r.clients) == 0 {
		r.clients = append(r.clients, client.New(addrs, ""))
	}
	r.client = r.clients[0]
	return r
}

// next moves reports to the next server (after a failed report).
func (r *Reporter) next() {
	r.cur = (r.cur + 1) % len(r.clients)
	r.client = r.clients[r.cur]
}

// SetEndpoint sets the address (host:port) of this task's launch server
// (atom rsh), sent with every Running beat from now on; a running Run
// beats at once. Safe for concurrent use.
func (r *Reporter) SetEndpoint(endpoint string) {
	r.mu.Lock()
	r.endpoint = endpoint
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Endpoint returns what SetEndpoint set.
func (r *Reporter) Endpoint() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endpoint
}

// Run heartbeats state Running now and then every period until ctx ends
// (it returns nil) or the coordinator wants the task stopped (it returns
// a *StopError). Failed beats are retried with backoff up to the period.
func (r *Reporter) Run(ctx context.Context) error {
	fails, refused := 0, 0
	answered := time.Now() // the last time a server answered
	for {
		ev := wire.Heartbeat{State: structs.TaskRunning, Time: time.Now(), Endpoint: r.Endpoint()}
		resp, err := r.client.Heartbeat(ctx, r.task, r.token, ev)
		var ce *client.Error
		if err == nil || errors.As(err, &ce) {
			answered = time.Now()
		}
		wait := r.every
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, client.ErrConflict):
			return &StopError{Reason: err.Error()}
		case refusedToken(err):
			// A server that has not applied the placement yet refuses the
			// token too; one that goes on refusing it, server after
			// server, does not know this task: running on would
			// duplicate whatever replaced it.
			if refused++; refused >= MaxRefusals {
				return &StopError{Reason: fmt.Sprintf("the coordinator refused this task's token %d times in a row: %v", refused, err)}
			}
			fails++
			wait = min(client.DefaultBackoff(fails), r.every)
			r.log.Warn("heartbeat refused; the job carries on for now", "task", r.task, "refusals", refused, "coordinator", r.client.Addr(), "err", err)
			r.next()
		case err != nil && r.StopAfterDisconnect > 0 && time.Since(answered) >= r.StopAfterDisconnect:
			return &StopError{Disconnected: true, Reason: fmt.Sprintf("no coordinator server answered a heartbeat for %s (the servers are gone): %v",
				r.StopAfterDisconnect, err)}
		case err != nil:
			fails, refused = fails+1, 0
			wait = min(client.DefaultBackoff(fails), r.every)
			r.log.Warn("heartbeat failed; the job carries on", "task", r.task, "failures", fails, "coordinator", r.client.Addr(), "err", err)
			r.next()
		case resp.State == structs.TaskStopping && time.Now().Before(resp.NoticeUntil):
			// Preempted with a notice: the job is told now, and keeps its
			// heartbeats until the notice ends.
			fails, refused = 0, 0
			if !r.noticed {
				r.noticed = true
				r.notices <- Notice{Until: resp.NoticeUntil, Signal: resp.NoticeSignal}
			}
			wait = min(wait, time.Until(resp.NoticeUntil))
		case resp.State == structs.TaskStopping:
			return &StopError{Reason: "task is stopping: " + string(resp.StopReason)}
		default:
			fails, refused = 0, 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// Notice is the coordinator's preemption notice: the task will be
// stopped (SIGTERM) at Until; Signal, if set, is the signal the job asked
// to be warned with.
type Notice struct {
	Until  time.Time
	Signal string
}

// Notices delivers the preemption notice, once, while Run runs; Run
// returns the StopError when the notice ends.
func (r *Reporter) Notices() <-chan Notice { return r.notices }

// MaxRefusals is how many heartbeats in a row the coordinator may refuse
// the task's token (401/403) before atom stops the job.
const MaxRefusals = 10

func refusedToken(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && (ce.Status == 401 || ce.Status == 403)
}

// Final reports the task's end, retrying with backoff until the
// coordinator takes it or ctx ends. A coordinator that already holds the
// task as ended (409) counts as taken.
func (r *Reporter) Final(ctx context.Context, state structs.TaskState, exitCode int, msg string) error {
	return r.final(ctx, wire.Heartbeat{State: state, ExitCode: exitCode, Message: msg, Time: time.Now()})
}

// FinalOutside reports, like Final, the end of a job atom stopped after a
// SIGTERM the coordinator had not asked for (reason StoppedOutside): the
// coordinator takes it as the end of its own stop, if it was stopping the
// task, else as the task lost.
func (r *Reporter) FinalOutside(ctx context.Context, state structs.TaskState, exitCode int, msg string) error {
	return r.final(ctx, wire.Heartbeat{State: state, ExitCode: exitCode, Message: msg,
		Reason: structs.ReasonStoppedOutside, Time: time.Now()})
}

// FinalDisconnected reports, like Final, the end of a job atom stopped
// because no coordinator server answered for StopAfterDisconnect (reason
// CoordinatorLost): an outage, which the coordinator takes as the task
// lost and its job requeued, not as the job's failure.
func (r *Reporter) FinalDisconnected(ctx context.Context, state structs.TaskState, exitCode int, msg string) error {
	return r.final(ctx, wire.Heartbeat{State: state, ExitCode: exitCode, Message: msg,
		Reason: structs.ReasonDisconnected, Time: time.Now()})
}

// FinalLauncherGone reports, like Final, an MPI worker's failure after
// atom stopped what the launcher had started on it because the
// launcher's connection closed (reason LauncherGone): the coordinator
// leaves the job's end to the launcher's own report.
func (r *Reporter) FinalLauncherGone(ctx context.Context, exitCode int, msg string) error {
	return r.final(ctx, wire.Heartbeat{State: structs.TaskFailed, ExitCode: exitCode, Message: msg,
		Reason: structs.ReasonLauncherGone, Time: time.Now()})
}

// FinalPreflight reports, like Final, that the accelerator preflight
// failed: state Failed with reason PreflightFailed and the allocated
// accelerator indices found bad (none: unknown). The coordinator
// quarantines them and places the job elsewhere.
func (r *Reporter) FinalPreflight(ctx context.Context, exitCode int, msg string, accels []int) error {
	return r.final(ctx, wire.Heartbeat{State: structs.TaskFailed, ExitCode: exitCode, Message: msg,
		Reason: structs.ReasonPreflightFailed, Accelerators: accels, Time: time.Now()})
}

func (r *Reporter) final(ctx context.Context, ev wire.Heartbeat) error {
	state := ev.State
	for n := 1; ; n++ {
		_, err := r.client.Heartbeat(ctx, r.task, r.token, ev)
		var ce *client.Error
		switch {
		case err == nil, errors.Is(err, client.ErrConflict):
			return nil
		case errors.As(err, &ce) && ce.Status != 503:
			return fmt.Errorf("report %s: %w", state, err) // refused for good
		}
		r.next()
		t := time.NewTimer(client.DefaultBackoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			if r.Unsent == "" {
				return fmt.Errorf("report %s: gave up: %w", state, err)
			}
			if werr := writeUnsent(r.Unsent, ev); werr != nil {
				return fmt.Errorf("report %s: gave up: %w; and %v", state, err, werr)
			}
			return fmt.Errorf("report %s: gave up, left in %s for the coordinator: %w", state, r.Unsent, err)
		case <-t.C:
		}
	}
}

// writeUnsent writes report ev to file, whole or not at all (a
// temporary file renamed over it).
func writeUnsent(file string, ev wire.Heartbeat) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("keep the report: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("keep the report: %w", err)
	}
	return nil
}
