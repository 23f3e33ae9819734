package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func TestEventsCommands(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: batch, priority: low, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "batch-00001-0-a0", structs.TaskRunning, apitest.T0)
	must(t, e, "u1", "job", "cancel", "batch-00001")

	assert.Equal(t, ""+
		"TIME                 EVENT      ATTEMPT  MESSAGE\n"+
		"2026-03-01 09:00:00  Submitted  1        submitted by u1: low priority, 1 replica(s) of cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Placed     1        replica 0 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Started    1        replica 0 started on c1\n"+
		"2026-03-01 09:00:00  Running    1        running: 1 replica(s) started\n"+
		"2026-03-01 09:00:00  Cancelled  1        cancelled by u1; stopping 1 task(s)\n",
		must(t, e, "u1", "job", "events", "batch-00001"))
	var l wire.EventList
	require.NoError(t, json.Unmarshal([]byte(must(t, e, "u1", "job", "events", "-o", "json", "batch-00001")), &l))
	require.Len(t, l.Events, 5)
	assert.Equal(t, structs.EventPlaced, l.Events[1].Type)
	assert.Equal(t, structs.TaskID("batch-00001-0-a0"), l.Events[1].Task)

	_, err := run(t, e, "u2", "job", "events", "batch-00001")
	require.Error(t, err)
	assert.Equal(t, "no events\n", must(t, e, "u2", "events"), "u2 sees none of u1's")

	assert.Equal(t, ""+
		"TIME                 JOB          EVENT      MESSAGE\n"+
		"2026-03-01 09:00:00  batch-00001  Running    running: 1 replica(s) started\n"+
		"2026-03-01 09:00:00  batch-00001  Cancelled  cancelled by u1; stopping 1 task(s)\n"+
		"(older events left out: raise --limit, up to 1000)\n",
		must(t, e, "admin", "events", "--limit", "2"))
	assert.Equal(t, "no events\n", must(t, e, "admin", "events", "--since", "5"))
	_, err = run(t, e, "admin", "events", "--since", "yesterday")
	assert.ErrorContains(t, err, `since "yesterday" is not allowed: use an event number (seq, e.g. an earlier answer's latest) or an RFC 3339 time`)
	for _, n := range []string{"0", "-1"} {
		_, err = run(t, e, "admin", "events", "--limit", n)
		assert.EqualError(t, err, "--limit "+n+" is not allowed: use a whole number from 1 to 1000 (default 100)")
		assert.Equal(t, 2, ExitCode(err))
	}
}

// Ages and durations read as kubectl's; start and end times of the job
// and each task; -o json carries RFC 3339 times and spec-style durations.
func TestTimeColumns(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: two, priority: low, replicas: 2, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "two-00001-0-a0", structs.TaskRunning, apitest.T0.Add(10*time.Second))
	e.Store.Report(t, "two-00001-1-a0", structs.TaskRunning, apitest.T0.Add(10*time.Second))
	e.Store.Report(t, "two-00001-1-a0", structs.TaskSucceeded, apitest.T0.Add(70*time.Second))

	assert.Equal(t, ""+
		"ID         NAME  KIND     OWNER  PROJECT  PRIORITY  STATE    REPLICAS  RESOURCES         AGE    DURATION\n"+
		"two-00001  two   command  u1     -        low       Running  2         cpu=1 memory=1Gi  3m12s  3m2s\n",
		must(t, e, "u1", "job", "list"))
	out := must(t, e, "u1", "job", "status", "two-00001")
	assert.Contains(t, out, ""+
		"Submitted:  2026-03-01 09:00:00 (3m12s ago)\n"+
		"Started:    2026-03-01 09:00:10\n"+
		"Duration:   3m2s\n")
	assert.Contains(t, out, ""+
		"TASK            INDEX  ATTEMPT  NODE  STATE               RESOURCES         STARTED              ENDED                DURATION\n"+
		"two-00001-0-a0  0      1        c1    Running             cpu=1 memory=1Gi  2026-03-01 09:00:10  -                    3m2s\n"+
		"two-00001-1-a0  1      1        c1    Succeeded (exit 0)  cpu=1 memory=1Gi  2026-03-01 09:00:10  2026-03-01 09:01:10  60s\n")

	out = must(t, e, "u1", "job", "status", "-o", "json", "two-00001")
	assert.Contains(t, out, `"pendingTimeout": "30m"`)
	assert.Contains(t, out, `"startedAt": "2026-03-01T09:00:10Z"`)
	assert.Contains(t, out, `"endedAt": "2026-03-01T09:01:10Z"`)
	assert.NotContains(t, out, "0001-01-01", "unset times are left out")

	e.Store.Report(t, "two-00001-0-a0", structs.TaskSucceeded, apitest.T0.Add(100*time.Second))
	assert.Contains(t, must(t, e, "u1", "job", "list"), "Succeeded  2         cpu=1 memory=1Gi  3m12s  90s\n")
}

// job events lists a job's events in the order they happened: by time,
// then in the order the coordinator recorded them, in the table and in
// -o json alike. Here replica 1 started first but its report came last;
// the job runs from its last replica's start. They were listed in the
// order recorded, replica 0's start first, and the job ran from the
// time of the last report.
func TestJobEventsInTheOrderTheyHappened(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: pair, priority: low, replicas: 2, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "pair-00001-0-a0", structs.TaskRunning, apitest.T0.Add(10*time.Second))
	e.Store.Report(t, "pair-00001-1-a0", structs.TaskRunning, apitest.T0.Add(5*time.Second))

	assert.Equal(t, ""+
		"TIME                 EVENT      ATTEMPT  MESSAGE\n"+
		"2026-03-01 09:00:00  Submitted  1        submitted by u1: low priority, 2 replica(s) of cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Placed     1        replica 0 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:00  Placed     1        replica 1 placed on c1: cpu=1 memory=1Gi\n"+
		"2026-03-01 09:00:05  Started    1        replica 1 started on c1\n"+
		"2026-03-01 09:00:10  Started    1        replica 0 started on c1\n"+
		"2026-03-01 09:00:10  Running    1        running: 2 replica(s) started\n",
		must(t, e, "u1", "job", "events", "pair-00001"))
	var l wire.EventList
	require.NoError(t, json.Unmarshal([]byte(must(t, e, "u1", "job", "events", "-o", "json", "pair-00001")), &l))
	var got []string
	for _, ev := range l.Events {
		got = append(got, ev.Time.Format("05")+" "+string(ev.Type)+" "+string(ev.Task))
	}
	assert.Equal(t, []string{"00 Submitted ", "00 Placed pair-00001-0-a0", "00 Placed pair-00001-1-a0",
		"05 Started pair-00001-1-a0", "10 Started pair-00001-0-a0", "10 Running "}, got)
	assert.Contains(t, must(t, e, "u1", "job", "status", "pair-00001"), "Started:    2026-03-01 09:00:10\n")
	assert.Contains(t, must(t, e, "admin", "events"), ""+
		"2026-03-01 09:00:05  pair-00001  Started    replica 1 started on c1\n"+
		"2026-03-01 09:00:10  pair-00001  Started    replica 0 started on c1\n"+
		"2026-03-01 09:00:10  pair-00001  Running    running: 2 replica(s) started\n", "the cluster's events too")
}
