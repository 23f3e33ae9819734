package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// The tests run one app at a time, not in parallel: urfave/cli/v2's help
// flag is a package variable that every running app writes to.

// testNow is the CLI's clock in tests: 3m12s after the API's, so ages
// read 3m12s.
var testNow = apitest.T0.Add(3*time.Minute + 12*time.Second)

func init() { now = func() time.Time { return testNow } }

// run runs the coordinator command as user against e and returns its
// output and error.
func run(t *testing.T, e *apitest.Env, user structs.UserID, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := App()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), append([]string{"coordinator", "--addr", e.URL(), "--token", e.Tokens[user]}, args...))
	return out.String(), err
}

// must is run that fails the test on an error.
func must(t *testing.T, e *apitest.Env, user structs.UserID, args ...string) string {
	t.Helper()
	out, err := run(t, e, user, args...)
	require.NoError(t, err, out)
	return out
}

// file writes content to a temporary file and returns its path.
func file(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spec.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const webSpec = `kind: service
name: web
project: perception
replicas: 2
minAvailable: 1
image: registry.local/web:1
command: [serve, --port, "8080"]
resources: {accelerators: {type: A100, count: 1}}
`

func TestJobCommands(t *testing.T) {
	e := apitest.NewEnv(t, "")
	spec := file(t, webSpec)

	// submit: table, then JSON for a second job.
	assert.Equal(t, "job web-00001 submitted: Pending\n", must(t, e, "u1", "job", "submit", "-f", spec))
	out := must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: batch, priority: low, resources: {cpu: "1", memory: 1Gi}}`), "-o", "json")
	var sub wire.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub), out)
	assert.Equal(t, structs.JobID("batch-00002"), sub.JobID)
	assert.Equal(t, structs.JobPending, sub.Job.State)

	// list, before and after a scheduling cycle.
	assert.Equal(t, ""+
		"ID           NAME   KIND     OWNER  PROJECT     PRIORITY  STATE    REPLICAS  RESOURCES         AGE    DURATION\n"+
		"batch-00002  batch  command  u1     -           low       Pending  1         cpu=1 memory=1Gi  3m12s  -\n"+
		"web-00001    web    service  u1     perception  normal    Pending  2         gpu/A100=1        3m12s  -\n",
		must(t, e, "u1", "job", "list"))
	e.Store.Schedule(t, apitest.T0)
	out = must(t, e, "m1", "-o", "json", "job", "list", "--state", "Scheduled")
	var list wire.JobList
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.Jobs, 1, "m1 sees the project's job, not u1's own")
	assert.Equal(t, structs.JobID("web-00001"), list.Jobs[0].ID)
	assert.Equal(t, "no jobs\n", must(t, e, "u2", "job", "list"))

	// status: the job and its tasks; never a token.
	out = must(t, e, "m1", "job", "status", "web-00001")
	assert.Equal(t, ""+
		"ID:         web-00001\n"+
		"Name:       web\n"+
		"Kind:       service\n"+
		"Owner:      u1\n"+
		"Project:    perception\n"+
		"Priority:   normal\n"+
		"State:      Scheduled\n"+
		"Replicas:   2 (starts at 1)\n"+
		"Resources:  gpu/A100=1 per replica\n"+
		"Image:      registry.local/web:1\n"+
		"Command:    serve --port 8080\n"+
		"Submitted:  2026-03-01 09:00:00 (3m12s ago)\n"+
		"Attempt:    1\n"+
		"\n"+
		"TASK            INDEX  ATTEMPT  NODE  STATE      RESOURCES                      STARTED  ENDED  DURATION\n"+
		"web-00001-0-a0  0      1        g1    Scheduled  cpu=12 memory=96Gi gpu/A100=1  -        -      -\n"+
		"web-00001-1-a0  1      1        g1    Scheduled  cpu=12 memory=96Gi gpu/A100=1  -        -      -\n",
		out)
	out = must(t, e, "u1", "job", "status", "-o", "yaml", "web-00001")
	var js wire.JobStatus
	require.NoError(t, yaml.Unmarshal([]byte(out), &js), out)
	assert.Len(t, js.Tasks, 2)
	for _, tok := range e.Store.Tokens() {
		assert.NotContains(t, out, tok)
	}

	// why: pending with reasons, and not pending.
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: ib, priority: low, selector: fabric=ib, resources: {accelerators: {type: A100, count: 1}}}`))
	e.Store.Schedule(t, apitest.T0)
	out = must(t, e, "u1", "job", "why", "ib-00003")
	assert.Contains(t, out, "ib-00003: Pending\n")
	assert.Contains(t, out, "not matching selector fabric=ib")
	assert.Contains(t, out, "NODES  FILTERED BECAUSE\n")
	out = must(t, e, "u1", "job", "why", "-o", "json", "web-00001")
	var why wire.WhyResponse
	require.NoError(t, json.Unmarshal([]byte(out), &why))
	assert.Equal(t, wire.WhyResponse{Job: "web-00001", State: structs.JobScheduled, Message: "not pending: the job is Scheduled"}, why)
	assert.Equal(t, "web-00001: Scheduled\nnot pending: the job is Scheduled\n", must(t, e, "u1", "job", "why", "web-00001"))

	// errors: not found for others, usage, logs.
	_, err := run(t, e, "u2", "job", "status", "web-00001")
	assert.EqualError(t, err, "job web-00001 not found")
	assert.Equal(t, 1, ExitCode(err))
	_, err = run(t, e, "u1", "job", "status")
	assert.EqualError(t, err, "usage: coordinator job status ID")
	assert.Equal(t, 2, ExitCode(err))
	_, err = run(t, e, "u1", "job", "logs", "web-00001")
	assert.ErrorContains(t, err, "this coordinator keeps no task logs")
	assert.Equal(t, 1, ExitCode(err))
	_, err = run(t, e, "u1", "job", "status", "web-00001", "-o", "json")
	assert.EqualError(t, err, "usage: coordinator job status ID: flags go before the arguments: coordinator job status -o json web-00001")
	// The README once showed `job logs ID [-f] [--task T]`: the hint is
	// the line to type, values kept with their flags.
	_, err = run(t, e, "u1", "job", "logs", "web-00001", "-f", "--task", "web-00001-0-a0")
	assert.EqualError(t, err, "usage: coordinator job logs ID: flags go before the arguments: coordinator job logs -f --task web-00001-0-a0 web-00001")
	_, err = run(t, e, "admin", "node", "release", "g1", "--accelerators=0,1")
	assert.EqualError(t, err, "usage: coordinator node release NAME: flags go before the arguments: coordinator node release --accelerators=0,1 g1")
	_, err = run(t, e, "u1", "-o", "xml", "job", "list")
	assert.ErrorContains(t, err, `-o "xml" is not allowed: use table, json or yaml`)

	// scale and cancel.
	assert.Equal(t, "service web-00001 scaled to 3 replicas\n", must(t, e, "m1", "service", "scale", "web-00001", "3"))
	_, err = run(t, e, "m1", "service", "scale", "web-00001", "many")
	assert.Equal(t, 2, ExitCode(err))
	assert.Equal(t, "service web-00001 scaled to 1 replica\n", must(t, e, "m1", "service", "scale", "web-00001", "1"))
	// To the size it has: said so, nothing applied (no event), exit 0.
	before := e.Store.StateJSON(t)
	assert.Equal(t, "service web-00001 already has 1 replica: nothing changed\n", must(t, e, "m1", "service", "scale", "web-00001", "1"))
	assert.Equal(t, before, e.Store.StateJSON(t))

	// a task atom stopped reads as stopped, with the reason, not as a crash.
	out = must(t, e, "m1", "job", "status", "web-00001")
	assert.Contains(t, out, "  Stopping (ScaledDown)  ")
	var stopped structs.TaskID
	for _, tk := range e.Store.Tasks("web-00001") {
		if tk.State == structs.TaskStopping {
			stopped = tk.ID
		}
	}
	require.NotEmpty(t, stopped, out)
	e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: stopped, State: structs.TaskFailed, ExitCode: 143, Time: apitest.T0}}})
	out = must(t, e, "m1", "job", "status", "web-00001")
	assert.Contains(t, out, "  Stopped: ScaledDown (exit 143)  ")
	assert.NotContains(t, out, "Failed")
	// a replica that exits is placed again, and status counts it.
	var live structs.TaskID
	for _, tk := range e.Store.Tasks("web-00001") {
		if tk.State.HoldsResources() {
			live = tk.ID
		}
	}
	e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: live, State: structs.TaskFailed, ExitCode: 1, Message: "out of memory", Time: apitest.T0}}})
	out = must(t, e, "m1", "job", "status", "web-00001")
	assert.Contains(t, out, "replica 0 failed with exit code 1: out of memory; placing it again\n")
	assert.Contains(t, out, "  Failed (exit 1): out of memory  ")
	assert.Contains(t, out, "Restarts:   1 replica(s) placed again\n")
	// 0 parks the service; a negative count is a usage error.
	_, err = run(t, e, "m1", "service", "scale", "web-00001", "-1")
	assert.Equal(t, 2, ExitCode(err))
	assert.ErrorContains(t, err, `REPLICAS "-1" is not allowed: use a whole number from 0 (park the service) to 10000`)
	assert.Equal(t, "service web-00001 scaled to 0 replicas\n"+
		"its replicas stop; the service stays (Running, 0 replicas, no quota held): scale it up to run it again\n",
		must(t, e, "m1", "service", "scale", "web-00001", "0"))
	out = must(t, e, "m1", "job", "status", "web-00001")
	assert.Contains(t, out, "State:      Running: scaled to 0 replicas\n")
	assert.Contains(t, out, "Replicas:   0 (starts at 1)\n")
	assert.Equal(t, "job web-00001 cancelled\n", must(t, e, "u1", "job", "cancel", "web-00001"))
	_, err = run(t, e, "u1", "job", "cancel", "web-00001")
	assert.ErrorContains(t, err, "already ended")
}

func TestSubmitErrorsSayWhy(t *testing.T) {
	e := apitest.NewEnv(t, "")
	_, err := run(t, e, "u1", "job", "submit", "-f", file(t, "kind: command\ncommand: [true]\nname: a\nreplica: 2\n"))
	assert.ErrorContains(t, err, "replica is not a known field")
	_, err = run(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 9}}}`))
	assert.ErrorContains(t, err, "can never fit")
	_, err = run(t, e, "u1", "job", "submit", "-f", filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorContains(t, err, "missing.yaml does not exist")
	_, err = run(t, e, "u1", "job", "submit")
	assert.ErrorContains(t, err, `Required flag "file" not set`)
}

// --wait prints the job's state changes until it runs.
func TestSubmitWait(t *testing.T) {
	e := apitest.NewEnv(t, "")
	spec := file(t, `{kind: command, command: [true], name: batch, priority: low, resources: {cpu: "1", memory: 1Gi}}`)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		app := App()
		app.Writer = &out
		err := app.Run([]string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "job", "submit", "-f", spec, "--wait", "--interval", "1ms"})
		done <- result{out.String(), err}
	}()
	require.Eventually(t, func() bool { return e.Store.Job("batch-00001") != nil }, 10*time.Second, time.Millisecond)
	e.Store.Schedule(t, apitest.T0)
	for _, tk := range e.Store.Tasks("batch-00001") {
		e.Store.Report(t, tk.ID, structs.TaskRunning, apitest.T0)
	}
	r := <-done
	require.NoError(t, r.err, r.out)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	// The test may schedule the job before the CLI prints its first line.
	assert.Regexp(t, `^job batch-00001 submitted: (Pending|Scheduled|Running)$`, lines[0])
	assert.True(t, strings.HasSuffix(lines[len(lines)-1], "Running"), r.out)
	var states []string
	for _, l := range lines[1:] {
		if !strings.Contains(l, "why: ") { // a pending job also says why, once per reason
			states = append(states, l)
		}
	}
	assert.LessOrEqual(t, len(states), 3, "Pending, maybe Scheduled, Running: one line per change: %s", r.out)

	// A job that ends badly makes --wait fail, with the reason.
	done2 := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		app := App()
		app.Writer = &out
		err := app.Run([]string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "-o", "json",
			"job", "submit", "-f", file(t, `{kind: command, command: [true], name: other, priority: low, resources: {cpu: "1"}}`), "--wait", "--interval", "1ms"})
		done2 <- result{out.String(), err}
	}()
	require.Eventually(t, func() bool { return e.Store.Job("other-00002") != nil }, 10*time.Second, time.Millisecond)
	e.Store.Must(t, &state.JobCancel{ID: "other-00002", Now: apitest.T0})
	r = <-done2
	assert.EqualError(t, r.err, "job other-00002 cancelled: cancelled")
	var js wire.JobStatus
	require.NoError(t, json.Unmarshal([]byte(r.out), &js), "-o json --wait prints the final status only: %s", r.out)
	assert.Equal(t, structs.JobCancelled, js.Job.State)
}

func TestAdminCommands(t *testing.T) {
	e := apitest.NewEnv(t, "")
	assert.Equal(t, ""+
		"SCOPE    RESOURCE  USED  LIMIT\n"+
		"user:u1  cpu       0     32\n"+
		"user:u1  gpu/A100  0     8\n"+
		"user:u1  memory    0     128Gi\n"+
		"\n"+
		"SCOPE    WEIGHT  FAIR SHARE  USAGE (DECAYED)  OF ALL USAGE  POSITION\n"+
		"user:u1  1       100%        0.0 GPU-h        0%            0%\n",
		must(t, e, "u1", "quota", "get", "user:u1"))
	_, err := run(t, e, "u1", "quota", "get", "user:u2")
	assert.ErrorContains(t, err, "may read the quota of user:u1")
	assert.Equal(t, "quota for user:u2 set: cpu=8 gpu/A100=2; removed (a key not listed is 0): memory\n",
		must(t, e, "admin", "quota", "set", "-f", file(t, "scope: user:u2\nlimits: {cpu: 8, gpu/A100: 2}\n")))
	out := must(t, e, "u2", "quota", "list", "-o", "json")
	var ql wire.QuotaList
	require.NoError(t, json.Unmarshal([]byte(out), &ql))
	assert.Equal(t, []wire.QuotaStatus{{Scope: "user:u2", Limits: structs.ResourceList{"cpu": 8000, "gpu/A100": 2}, Usage: structs.ResourceList{},
		FairShare: sched.Standing{Weight: 1, Share: 1}}}, ql.Quotas)

	_, err = run(t, e, "u1", "pool", "set", "-f", file(t, "name: vision\nproject: vision\n"))
	assert.ErrorContains(t, err, "is for admins")
	assert.Equal(t, "pool vision set\n", must(t, e, "admin", "pool", "set", "-f", file(t, "name: vision\nproject: vision\nmembers: [u2]\nmaxPreemptNotice: 10m\n")))
	assert.Equal(t, ""+
		"NAME        PROJECT     MEMBERS  LENDS IDLE NODES  MIN RUNTIME  MAX NOTICE\n"+
		"perception  perception  u1,m1    true              -            5m0s\n"+
		"vision      vision      u2       false             -            10m0s\n",
		must(t, e, "u2", "pool", "list"))
	assert.Equal(t, "pool public set\n", must(t, e, "admin", "pool", "set", "-f", file(t, "name: public\nminRuntime: 10m\n")))
	assert.Equal(t, ""+
		"NAME        PROJECT     MEMBERS  LENDS IDLE NODES  MIN RUNTIME  MAX NOTICE\n"+
		"perception  perception  u1,m1    true              -            5m0s\n"+
		"public      -           -        false             10m0s        5m0s\n"+
		"vision      vision      u2       false             -            10m0s\n",
		must(t, e, "u2", "pool", "list"))
	_, err = run(t, e, "admin", "pool", "set", "-f", file(t, "name: public\nminRuntime: 25h\n"))
	assert.ErrorContains(t, err, `minRuntime "25h" is not allowed: use a duration from 0s to 24h, such as 10m (leave it out for none)`)
	_, err = run(t, e, "admin", "pool", "delete", "public")
	assert.ErrorContains(t, err, "the public pool is never deleted: set it without minRuntime to drop its settings")
	assert.Equal(t, "pool public set\n", must(t, e, "admin", "pool", "set", "-f", file(t, "name: public\n")))
	assert.NotContains(t, must(t, e, "u2", "pool", "list"), "public")

	assert.Equal(t, "node v1 set: cpu=8 memory=32Gi\n", must(t, e, "admin", "node", "set", "-f", file(t, "name: v1\npool: vision\ncpu: 8\nmemory: 32Gi\n")))
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: service, command: [true], name: web, project: perception, resources: {accelerators: {type: A100, count: 2}}}`))
	e.Store.Schedule(t, apitest.T0)
	assert.Equal(t, ""+
		"NAME  CLUSTER  POOL        STATE  CPU    MEMORY       ACCELERATORS  DEVICES  QUARANTINED  TASKS  TAGS\n"+
		"c1    local    public      ready  0/64   0/256Gi      -             -        -            0      -\n"+
		"g1    local    perception  ready  24/96  192Gi/768Gi  A100 2/8      -        -            1      A100\n"+
		"g2    local    public      ready  0/96   0/768Gi      A100 0/8      -        -            0      A100\n"+
		"v1    local    vision      ready  0/8    0/32Gi       -             -        -            0      -\n",
		must(t, e, "u1", "node", "list"))
	_, err = run(t, e, "admin", "pool", "delete", "vision")
	assert.ErrorContains(t, err, "still has node v1")
	assert.Equal(t, "node v1 deleted\n", must(t, e, "admin", "node", "delete", "v1"))
	assert.Equal(t, "pool vision deleted\n", must(t, e, "admin", "pool", "delete", "vision"))

	assert.Contains(t, must(t, e, "admin", "cluster", "set", "-f", file(t, "name: remote\nbackend: kubernetes\nredis: 10.0.0.5:6379\n")),
		"cluster remote added: a new cluster, beside cluster local; node specs must now name their cluster.")
	assert.Equal(t, ""+
		"NAME    BACKEND     REDIS\n"+
		"local   local       -\n"+
		"remote  kubernetes  10.0.0.5:6379\n",
		must(t, e, "u1", "cluster", "list"))
	out = must(t, e, "u1", "cluster", "list", "-o", "yaml")
	assert.Contains(t, out, "- backend: kubernetes\n")
}

func TestNoToken(t *testing.T) {
	e := apitest.NewEnv(t, "")
	var out bytes.Buffer
	app := App()
	app.Writer = &out
	err := app.Run([]string{"coordinator", "--addr", e.URL(), "job", "list"})
	assert.ErrorContains(t, err, "no token: send Authorization: Bearer <token> (coordinator --token or ATOM_TOKEN)")
}

func TestTaskState(t *testing.T) {
	started := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for want, tk := range map[string]*structs.Task{
		"Running":                                {State: structs.TaskRunning},
		"Stopping (Preempted)":                   {State: structs.TaskStopping, StopReason: structs.StopPreempted},
		"Stopped: Preempted (exit 143)":          {State: structs.TaskFailed, StopReason: structs.StopPreempted, ExitCode: 143},
		"Stopped: Cancelled (exit 0)":            {State: structs.TaskSucceeded, StopReason: structs.StopCancelled},
		"Stopped: GangRestart (exit 137)":        {State: structs.TaskFailed, StopReason: structs.StopGang, ExitCode: 137},
		"Failed (exit 1)":                        {State: structs.TaskFailed, ExitCode: 1},
		"Succeeded (exit 0)":                     {State: structs.TaskSucceeded},
		"Lost":                                   {State: structs.TaskLost, StopReason: structs.StopScaled},
		"Failed: never started: WarmUpFailed: x": {State: structs.TaskFailed, Message: "never started: WarmUpFailed: x"},
		"Stopped: Cancelled: never started: y":   {State: structs.TaskFailed, StopReason: structs.StopCancelled, Message: "never started: y"},
		// The Stopped state (the ones above recorded before it existed).
		"Stopped: GangRestart (exit 143)":     {State: structs.TaskStopped, StopReason: structs.StopGang, ExitCode: 143, StartedAt: started},
		"Stopped: Preempted (exit 0)":         {State: structs.TaskStopped, StopReason: structs.StopPreempted, StartedAt: started},
		"Stopped: CoordinatorShutdown":        {State: structs.TaskStopped, StopReason: structs.StopShutdown, Message: structs.ShutdownMessage, StartedAt: started},
		"Stopped: Cancelled":                  {State: structs.TaskStopped, StopReason: structs.StopCancelled, Message: structs.ShutdownMessage},
		"Stopped: JobEnded: never started: z": {State: structs.TaskStopped, StopReason: structs.StopJobEnded, Message: "never started: z"},
	} {
		assert.Equal(t, want, taskState(tk))
	}
}
