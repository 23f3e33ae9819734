package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestEndedJobDuration: an ended job's DURATION runs from its first start
// to its end whatever ended it, "-" when it never started. A job that ran,
// failed, was requeued by its restart policy and was then cancelled while
// pending read "-" (its current attempt had not started).
func TestEndedJobDuration(t *testing.T) {
	e := apitest.NewEnv(t, "")
	t0 := apitest.T0.Add(-time.Hour)
	submit := func(id string, policy structs.RestartPolicy) {
		j := st.NewJob(id, "u1").CPU(1, 1).Obj()
		j.RestartPolicy = policy
		e.Store.Must(t, &state.JobSubmit{Job: j, Now: t0})
	}
	submit("ran-1", structs.RestartOnFailure)
	submit("running-2", structs.RestartNever)
	require.ElementsMatch(t, []structs.JobID{"ran-1", "running-2"}, e.Store.Schedule(t, t0).Placed)
	for _, id := range []structs.JobID{"ran-1", "running-2"} {
		e.Store.Report(t, e.Store.Tasks(id)[0].ID, structs.TaskRunning, t0.Add(time.Minute))
	}
	// ran-1 fails after 10 minutes and waits to run again.
	e.Store.Report(t, e.Store.Tasks("ran-1")[0].ID, structs.TaskFailed, t0.Add(11*time.Minute))
	require.Equal(t, structs.JobPending, e.Store.Job("ran-1").State)
	submit("never-3", structs.RestartNever)
	for _, id := range []structs.JobID{"ran-1", "running-2", "never-3"} {
		e.Store.Must(t, &state.JobCancel{ID: id, Now: t0.Add(31 * time.Minute)})
	}

	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(must(t, e, "u1", "job", "list", "--state", "Cancelled")), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f[len(f)-1]
	}
	assert.Equal(t, map[string]string{"ran-1": "30m", "running-2": "30m", "never-3": "-"}, rows)
	assert.Contains(t, must(t, e, "u1", "job", "status", "ran-1"), "Duration:")
}

// TestRestartedJobDuration: a job that ran, failed, restarted and then
// succeeded shows its first start and its attempt's start, and a DURATION
// from the first start to its end, in list and status alike.
func TestRestartedJobDuration(t *testing.T) {
	e := apitest.NewEnv(t, "")
	t0 := apitest.T0.Add(-time.Hour)
	j := st.NewJob("mpi-1", "u1").CPU(1, 1).Obj()
	j.RestartPolicy = structs.RestartOnFailure
	e.Store.Must(t, &state.JobSubmit{Job: j, Now: t0})
	require.Equal(t, []structs.JobID{"mpi-1"}, e.Store.Schedule(t, t0).Placed)
	e.Store.Report(t, e.Store.Tasks("mpi-1")[0].ID, structs.TaskRunning, t0.Add(time.Minute))
	e.Store.Report(t, e.Store.Tasks("mpi-1")[0].ID, structs.TaskFailed, t0.Add(11*time.Minute))
	require.Equal(t, structs.JobPending, e.Store.Job("mpi-1").State)
	status := must(t, e, "u1", "job", "status", "mpi-1")
	assert.Contains(t, status, "Started:")
	assert.Contains(t, status, when(t0.Add(time.Minute))+" (attempt 2 not started yet)")

	require.Equal(t, []structs.JobID{"mpi-1"}, e.Store.Schedule(t, t0.Add(20*time.Minute)).Placed)
	tasks := e.Store.Tasks("mpi-1")
	last := tasks[len(tasks)-1].ID
	e.Store.Report(t, last, structs.TaskRunning, t0.Add(21*time.Minute))
	e.Store.Report(t, last, structs.TaskSucceeded, t0.Add(31*time.Minute))
	require.Equal(t, structs.JobSucceeded, e.Store.Job("mpi-1").State)

	list := strings.Split(strings.TrimSpace(must(t, e, "u1", "job", "list", "--state", "Succeeded")), "\n")
	require.Len(t, list, 2)
	f := strings.Fields(list[1])
	assert.Equal(t, "30m", f[len(f)-1])
	status = must(t, e, "u1", "job", "status", "mpi-1")
	assert.Regexp(t, `Started:\s+`+when(t0.Add(time.Minute))+` \(attempt 2 started `+when(t0.Add(21*time.Minute))+`\)`, status)
	assert.Regexp(t, `Duration:\s+30m\n`, status)
}
