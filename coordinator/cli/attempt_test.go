package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// TestAttemptsCountFromOne: a job's attempts read counted from 1 wherever
// the CLI shows one (job status, its tasks, job events), as the
// Requeued event's "attempt 2" says; -o json keeps the API's field, which
// counts requeues from 0.
func TestAttemptsCountFromOne(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: flaky, priority: low, replicas: 2, restartPolicy: OnFailure, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "flaky-00001-0-a0", structs.TaskRunning, apitest.T0)
	e.Store.Report(t, "flaky-00001-1-a0", structs.TaskRunning, apitest.T0)
	for _, ev := range []structs.TaskEvent{
		{Task: "flaky-00001-1-a0", State: structs.TaskFailed, ExitCode: 1, Time: apitest.T0.Add(time.Minute)},
		{Task: "flaky-00001-0-a0", State: structs.TaskFailed, ExitCode: 143, Time: apitest.T0.Add(time.Minute)},
	} {
		e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{ev}})
	}
	require.Equal(t, structs.JobPending, e.Store.Job("flaky-00001").State)

	e.Store.Schedule(t, apitest.T0.Add(2*time.Minute))
	out := must(t, e, "u1", "job", "status", "flaky-00001")
	assert.Contains(t, out, "Started:    2026-03-01 09:00:00 (attempt 2 not started yet)\n")
	assert.Contains(t, out, "Attempt:    2\n")
	assert.Contains(t, out, ""+
		"TASK              INDEX  ATTEMPT  NODE  STATE                            RESOURCES         STARTED              ENDED                DURATION\n"+
		"flaky-00001-0-a0  0      1        c1    Stopped: GangRestart (exit 143)  cpu=1 memory=1Gi  2026-03-01 09:00:00  2026-03-01 09:01:00  60s\n"+
		"flaky-00001-0-a1  0      2        c1    Scheduled                        cpu=1 memory=1Gi  -                    -                    -\n"+
		"flaky-00001-1-a0  1      1        c1    Failed (exit 1)                  cpu=1 memory=1Gi  2026-03-01 09:00:00  2026-03-01 09:01:00  60s\n"+
		"flaky-00001-1-a1  1      2        c1    Scheduled                        cpu=1 memory=1Gi  -                    -                    -\n")

	assert.Equal(t, ""+
		"TIME                 EVENT       ATTEMPT  MESSAGE\n"+
		"2026-03-01 09:00:00  Submitted   1        submitted by u1: low priority, 2 replica(s) of cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Placed      1        replica 0 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Placed      1        replica 1 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Started     1        replica 0 started on c1\n"+
		"2026-03-01 09:00:00  Started     1        replica 1 started on c1\n"+
		"2026-03-01 09:00:00  Running     1        running: 2 replica(s) started\n"+
		"2026-03-01 09:01:00  Failed      1        replica 1 failed with exit code 1\n"+
		"2026-03-01 09:01:00  Restarting  1        restart 1 of 3: replica 1 failed with exit code 1; stopping 1 task(s) first\n"+
		"2026-03-01 09:01:00  Stopped     1        replica 0 stopped (GangRestart) with exit code 143\n"+
		"2026-03-01 09:01:00  Requeued    2        pending again as attempt 2: restart 1 of 3: replica 1 failed with exit code 1\n"+
		"2026-03-01 09:02:00  Placed      2        replica 0 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:02:00  Placed      2        replica 1 placed on c1: cpu=1 memory=1Gi\n",
		must(t, e, "u1", "job", "events", "flaky-00001"))

	var js wire.JobStatus
	require.NoError(t, json.Unmarshal([]byte(must(t, e, "u1", "job", "status", "-o", "json", "flaky-00001")), &js))
	assert.Equal(t, 1, js.Job.Attempt, "the API counts requeues, from 0")
	for _, tk := range js.Tasks {
		if tk.ID == "flaky-00001-0-a0" {
			assert.Equal(t, []any{structs.TaskStopped, structs.StopGang, 143}, []any{tk.State, tk.StopReason, tk.ExitCode},
				"the API says what the table does: stopped, not failed")
		}
	}
	var l wire.EventList
	require.NoError(t, json.Unmarshal([]byte(must(t, e, "u1", "job", "events", "-o", "json", "flaky-00001")), &l))
	assert.Equal(t, 1, l.Events[len(l.Events)-1].Attempt)
}
