package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

const adminToken = "admin-token-0123456789"

// devCoordinator starts a one-server coordinator with the dev cluster,
// whose local backend runs jobs as processes, and returns its client;
// opts change its configuration first.
func devCoordinator(t *testing.T, opts ...func(*daemon.Config)) (*daemon.Daemon, *client.Client) {
	t.Helper()
	tokens, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, Cluster: cluster,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d, client.New(d.URL, adminToken)
}

// submit submits a job running command and returns its ID; it retries
// until the dev cluster's config has landed.
func submit(t *testing.T, c *client.Client, name string, resources map[string]any, command ...string) structs.JobID {
	t.Helper()
	spec, err := json.Marshal(map[string]any{"kind": "command", "name": name, "command": command, "resources": resources})
	require.NoError(t, err)
	var id structs.JobID
	require.Eventually(t, func() bool {
		r, err := c.SubmitJob(context.Background(), spec, "req-"+name)
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, waitLong, 20*time.Millisecond)
	return id
}

// waitJob waits until job id has ended and returns it.
func waitJob(t *testing.T, c *client.Client, id structs.JobID) *structs.Job {
	t.Helper()
	var job *structs.Job
	require.Eventually(t, func() bool {
		st, err := c.Job(context.Background(), id)
		if err == nil {
			job = st.Job
		}
		return err == nil && st.Job.State.Ended()
	}, waitLong, 20*time.Millisecond)
	return job
}

// beat is one heartbeat atom sent and how the coordinator answered.
type beat struct {
	State  structs.TaskState
	Exit   int
	Status int
}

// recorder is a reverse proxy in front of the coordinator that records
// atom's heartbeats, so a test sees what atom itself reported (the local
// backend reports on its processes as well).
type recorder struct {
	URL   string
	mu    sync.Mutex
	beats []beat // guarded by mu
	down  bool   // guarded by mu: answer 503 without asking the coordinator
}

// SetDown starts or ends a coordinator outage as atom sees it.
func (r *recorder) SetDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// count counts the beats in state answered with status.
func (r *recorder) count(state structs.TaskState, status int) int {
	n := 0
	for _, b := range r.Beats() {
		if b.State == state && b.Status == status {
			n++
		}
	}
	return n
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	r := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var ev struct {
			State    structs.TaskState `json:"state"`
			ExitCode int               `json:"exitCode"`
		}
		_ = json.Unmarshal(body, &ev)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r.mu.Lock()
		down := r.down
		r.mu.Unlock()
		if down {
			http.Error(sw, `{"error":"no leader"}`, http.StatusServiceUnavailable)
		} else {
			proxy.ServeHTTP(sw, req)
		}
		// A beat atom gave up on (its context ended) may finish after
		// later ones; atom never saw its answer, so it is not recorded.
		if strings.HasSuffix(req.URL.Path, "/heartbeat") && req.Context().Err() == nil {
			r.mu.Lock()
			r.beats = append(r.beats, beat{State: ev.State, Exit: ev.ExitCode, Status: sw.status})
			r.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *recorder) Beats() []beat {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]beat(nil), r.beats...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

// TestHeartbeatsReachCoordinator: a job whose command is atom run, on a
// real coordinator: atom reports Running while the job runs, rides out a
// coordinator outage without touching the job, reports Succeeded at the
// end, and the job ends Succeeded.
func TestHeartbeatsReachCoordinator(t *testing.T) {
	t.Parallel()
	d, c := devCoordinator(t)
	rec := newRecorder(t, d.URL)
	fifo := filepath.Join(t.TempDir(), "go")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	id := submit(t, c, "beats", map[string]any{"cpu": 1, "memory": "1Gi"},
		atomBin, "run", "--coordinator", rec.URL, "--heartbeat", "100ms", "--", "sh", "-c", "read line < "+fifo)

	// The job runs until the test writes to the FIFO: the coordinator
	// holds it Running, then atom's beats are answered (those after the
	// first change nothing: no commit to wait for).
	waitRunning(t, c, id)
	require.Eventually(t, func() bool { return rec.count(structs.TaskRunning, http.StatusOK) >= 1 },
		waitLong, 10*time.Millisecond, "atom heartbeats Running")
	st, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, st.Job.State)
	assert.Equal(t, structs.TaskRunning, st.Tasks[0].State)

	// An outage: atom keeps trying and the job keeps running.
	rec.SetDown(true)
	require.Eventually(t, func() bool { return rec.count(structs.TaskRunning, http.StatusServiceUnavailable) >= 3 },
		waitLong, 10*time.Millisecond, "atom retries through the outage")
	ok := rec.count(structs.TaskRunning, http.StatusOK)
	rec.SetDown(false)
	require.Eventually(t, func() bool { return rec.count(structs.TaskRunning, http.StatusOK) > ok },
		waitLong, 10*time.Millisecond, "atom heartbeats again after the outage")
	st, err = c.Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, st.Job.State, "the outage did not touch the job")

	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("go\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	job := waitJob(t, c, id)
	assert.Equal(t, structs.JobSucceeded, job.State)
	beats := waitLastBeat(t, rec, structs.TaskSucceeded, 0) // atom's final report
	for _, b := range beats[:len(beats)-1] {
		assert.Equal(t, structs.TaskRunning, b.State)
		assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, b.Status)
	}
	st, err = c.Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, structs.TaskSucceeded, st.Tasks[0].State)
}

// TestFailedPreflightQuarantines: a task allocated an A100 on a machine
// without NVML fails atom's real preflight, its command not started (the
// local backend simulates its nodes' GPUs; the inner atom is told to use
// NVML). atom reports PreflightFailed, so the coordinator quarantines that
// accelerator and places the job on another one, without using its
// restart budget. The failure follows this job everywhere, so after
// MaxPreflightRequeues quarantines it is an ordinary failure; an admin
// then releases the accelerators.
func TestFailedPreflightQuarantines(t *testing.T) {
	t.Parallel()
	d, c := devCoordinator(t)
	ctx := context.Background()
	rec := newRecorder(t, d.URL)
	marker := filepath.Join(t.TempDir(), "ran")
	id := submit(t, c, "gpu", map[string]any{"accelerators": map[string]any{"type": "A100", "count": 1}},
		atomBin, "run", "--simulated-gpus=false", "--coordinator", rec.URL, "--", "touch", marker)
	job := waitJob(t, c, id)
	const nvml = "gpu preflight failed: nvml: accelerators allocated but NVML is not available (1 A100 allocated)"
	assert.Equal(t, structs.JobFailed, job.State)
	assert.Equal(t, "replica 0 failed with exit code 3: "+nvml+" (nothing quarantined: the job failed preflight on 3 allocations already, so the job itself is suspect)", job.Reason)
	assert.Equal(t, state.MaxPreflightRequeues, job.PreflightFailures)
	assert.Equal(t, state.MaxPreflightRequeues, job.Attempt, "one attempt per allocation, no restarts")
	// One report per attempt, each taken. The recorder notes the last
	// report once its answer is back, which may be after the job is seen
	// Failed.
	require.Eventually(t, func() bool {
		beats := rec.Beats()
		for _, b := range beats {
			if b.State != structs.TaskFailed || b.Exit != 3 || !taken(b.Status) {
				return false
			}
		}
		return len(beats) == state.MaxPreflightRequeues+1
	}, waitLong, 10*time.Millisecond, "%v", rec.Beats())
	assert.NoFileExists(t, marker)

	// Each attempt ran on an accelerator not quarantined before it; the
	// first three are quarantined now, with atom's message.
	st, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Len(t, st.Tasks, state.MaxPreflightRequeues+1)
	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	quarantined := map[string]structs.Quarantine{}
	for _, n := range nodes {
		for _, q := range n.Quarantined {
			quarantined[fmt.Sprintf("%s/%d", n.Name, q.Accel)] = q
		}
	}
	assert.Len(t, quarantined, state.MaxPreflightRequeues)
	seen := map[string]bool{}
	for _, tk := range st.Tasks {
		where := fmt.Sprintf("%s/%d", tk.Node, tk.Accels.Indices()[0])
		assert.False(t, seen[where], "attempt %d placed on %s again", tk.Attempt, where)
		seen[where] = true
		if q, ok := quarantined[where]; ok {
			assert.Equal(t, nvml, q.Reason)
			assert.Equal(t, tk.ID, q.Task)
		} else {
			assert.Equal(t, state.MaxPreflightRequeues, tk.Attempt, "only the last attempt quarantined nothing")
		}
	}

	// Once the hardware is fixed, an admin returns the accelerators.
	for _, n := range nodes {
		if len(n.Quarantined) > 0 {
			res, err := c.ReleaseNode(ctx, n.Name, nil)
			require.NoError(t, err)
			assert.Len(t, res.Released, len(n.Quarantined))
			assert.Empty(t, res.Node.Quarantined)
		}
	}
}

// TestCoordinatorStopsTask: when the coordinator says the task is
// stopping or has ended, atom stops its job (SIGTERM first) and exits with
// its status. The job's own process only publishes its allocation; the
// test runs atom with it, so the coordinator, not the local backend,
// is what stops atom's child.
func TestCoordinatorStopsTask(t *testing.T) {
	t.Parallel()
	d, c := devCoordinator(t)
	dir := t.TempDir()
	alloc := filepath.Join(dir, "alloc")
	id := submit(t, c, "holder", map[string]any{"cpu": 1, "memory": "1Gi"},
		"sh", "-c", `echo "$ATOM_TASK_ID $ATOM_TOKEN" > `+alloc+`.tmp && mv `+alloc+`.tmp `+alloc+` && exec sleep 1000`)
	var fields []string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(alloc)
		fields = strings.Fields(string(b))
		return err == nil && len(fields) == 2
	}, 10*time.Second, 10*time.Millisecond)

	ready := filepath.Join(dir, "ready")
	cmd := atomCmd(t, []string{"ATOM_COORDINATOR=" + d.URL, "ATOM_TASK_ID=" + fields[0], "ATOM_TOKEN=" + fields[1]},
		"run", "--heartbeat", "100ms", "--grace", "5s", "--report-timeout", "2s", "--",
		"sh", "-c", `echo "$ATOM_TOKEN" > `+ready+`.tmp; trap 'kill $!; exit 42' TERM; sleep 100 & mv `+ready+`.tmp `+ready+`; wait`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, 10*time.Second, 10*time.Millisecond)

	// atom's job sees the launch token, not the allocation token: it may
	// list its peers (atom rsh does), not report for its task (claim a
	// failed GPU preflight to quarantine GPUs, or end it).
	b, err := os.ReadFile(ready)
	require.NoError(t, err)
	launch, task := strings.TrimSpace(string(b)), structs.TaskID(fields[0])
	assert.Equal(t, structs.LaunchToken(fields[1]), launch)
	ctx := context.Background()
	peers, err := c.Peers(ctx, task, launch)
	require.NoError(t, err)
	assert.Len(t, peers.Peers, 1)
	_, err = c.Heartbeat(ctx, task, launch, wire.Heartbeat{State: structs.TaskFailed, ExitCode: 3,
		Reason: structs.ReasonPreflightFailed, Accelerators: []int{0}, Message: "fake"})
	require.ErrorIs(t, err, client.ErrUnauthorized)
	_, err = c.Heartbeat(ctx, task, launch, wire.Heartbeat{State: structs.TaskSucceeded})
	require.ErrorIs(t, err, client.ErrUnauthorized)
	js, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, structs.JobRunning, js.Job.State, "the refused reports changed nothing")

	_, err = c.CancelJob(context.Background(), id)
	require.NoError(t, err)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "output: %s", out.String())
		assert.Equal(t, 42, ee.ExitCode(), "output: %s", out.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("atom did not stop its job after the coordinator stopped the task; output: %s", out.String())
	}
	assert.Contains(t, out.String(), "the coordinator stopped the task")
	assert.Equal(t, structs.JobCancelled, waitJob(t, c, id).State)
}

// TestReportsMoveToAnotherServer: ATOM_COORDINATOR lists every server;
// with the first one gone, atom's reports reach the next and the job ends
// Succeeded (a task outlives the server that started it).
func TestReportsMoveToAnotherServer(t *testing.T) {
	t.Parallel()
	d, c := devCoordinator(t)
	rec := newRecorder(t, d.URL)
	dead := "http://" + freeLoopback(t) // nothing listens there
	id := submit(t, c, "failover", map[string]any{"cpu": 1, "memory": "1Gi"},
		atomBin, "run", "--coordinator", dead+","+rec.URL, "--heartbeat", "100ms", "--", "sh", "-c", "exit 0")
	job := waitJob(t, c, id)
	assert.Equal(t, structs.JobSucceeded, job.State)
	waitLastBeat(t, rec, structs.TaskSucceeded, 0) // the final report went to the live server
}

// waitLastBeat waits until the recorder's last beat is a final report of
// state with exit code exit that the coordinator took (it notes a report
// once its answer is back, which may be after the job is seen ended) and
// returns the beats.
func waitLastBeat(t *testing.T, rec *recorder, state structs.TaskState, exit int) []beat {
	t.Helper()
	var beats []beat
	require.Eventually(t, func() bool {
		beats = rec.Beats()
		last := beat{}
		if len(beats) > 0 {
			last = beats[len(beats)-1]
		}
		return last.State == state && last.Exit == exit && taken(last.Status)
	}, waitLong, 10*time.Millisecond, "last beat %s exit %d", state, exit)
	return beats
}

// taken reports whether a final report answered status reached the
// coordinator: 200, or 409 when an earlier try that atom gave up on (its
// answer was slow, the machine loaded) had already ended the task.
func taken(status int) bool { return status == http.StatusOK || status == http.StatusConflict }

// waitLong bounds waits for things that happen whatever the load, only
// slower under it: a generous bound, never reached on a healthy run.
const waitLong = time.Minute

// waitRunning waits until the coordinator holds job id Running.
func waitRunning(t *testing.T, c *client.Client, id structs.JobID) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := c.Job(context.Background(), id)
		return err == nil && st.Job.State == structs.JobRunning
	}, waitLong, 10*time.Millisecond, "job %s Running", id)
}

// freeLoopback returns a loopback host:port nothing listens on.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
