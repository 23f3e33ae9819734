package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRestartBudgetReadsAsEventsCount: a job with restartPolicy OnFailure
// requeued by a coordinator's shutdown (not its fault: no restart used),
// then failing twice. job status says how many of its restarts it used
// and which requeues used none; job why names the attempt it waits to
// start as job events do, counted from 1, and which restart that is.
func TestRestartBudgetReadsAsEventsCount(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [x], name: flaky, restartPolicy: OnFailure, resources: {cpu: "1", memory: 1Gi}}`))
	const id = "flaky-00001"
	at := func(d time.Duration) time.Time { return apitest.T0.Add(d) }
	run := func(task structs.TaskID, now time.Time) {
		e.Store.Schedule(t, now)
		e.Store.Report(t, task, structs.TaskRunning, now)
	}
	end := func(ev structs.TaskEvent) { e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{ev}}) }

	run(id+"-0-a0", at(0))
	end(structs.TaskEvent{Task: id + "-0-a0", State: structs.TaskLost, Reason: structs.ReasonShutdown, Time: at(time.Minute)})
	run(id+"-0-a1", at(time.Minute))
	end(structs.TaskEvent{Task: id + "-0-a1", State: structs.TaskFailed, ExitCode: 1, Time: at(2 * time.Minute)})
	run(id+"-0-a2", at(2*time.Minute))
	// The second restart waits 10 s: until 09:03:15, after the CLI's
	// clock (09:03:12).
	end(structs.TaskEvent{Task: id + "-0-a2", State: structs.TaskFailed, ExitCode: 1, Time: at(3*time.Minute + 5*time.Second)})
	e.Store.Schedule(t, at(3*time.Minute+10*time.Second))
	require.Equal(t, structs.JobPending, e.Store.Job(id).State)

	out := must(t, e, "u1", "job", "status", id)
	assert.Contains(t, out, ""+
		"Attempt:    4\n"+
		"Restarts:   2 of 3 used; requeues that used none (not the job's fault): 1 coordinator shutdown or outage; back-off until 2026-03-01 09:03:15\n", out)

	why := strings.SplitAfterN(must(t, e, "u1", "job", "why", id), "\n", 3)
	assert.Equal(t, ""+
		"flaky-00001: Pending\n"+
		"restart back-off: attempt 4 (restart 2 of 3) waits until 2026-03-01T09:03:15Z (in 5s)\n",
		why[0]+why[1])

	events := must(t, e, "u1", "job", "events", id)
	assert.Regexp(t, `\n\S+ 09:01:00  Requeued +2 +pending again as attempt 2: stopped: coordinator shutting down\n`, events)
	assert.Regexp(t, `\n\S+ 09:03:05  Requeued +4 +pending again as attempt 4: restart 2 of 3: replica 0 failed with exit code 1\n`, events)
}

// A job whose restart policy gives it no budget shows none.
func TestNoRestartBudgetWithoutOnFailure(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [x], name: once, resources: {cpu: "1", memory: 1Gi}}`))
	assert.NotContains(t, must(t, e, "u1", "job", "status", "once-00001"), "Restarts:")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [x], name: again, restartPolicy: OnFailure, resources: {cpu: "1", memory: 1Gi}}`))
	assert.Contains(t, must(t, e, "u1", "job", "status", "again-00002"), "Restarts:   0 of 3 used\n")
}
