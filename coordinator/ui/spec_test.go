package ui_test

import (
	"html"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

var (
	specSection = regexp.MustCompile(`(?s)<pre class="spec">(.*?)</pre>`)
	facts       = regexp.MustCompile(`<dt>([^<]*)</dt><dd>([^<]*)</dd>`)
)

// The job page's Spec section showed the job as the server keeps it:
// its start and end times, its requeues, defaults the server filled in
// and resources in millicores and bytes. Now it shows what the user
// wrote, in a spec's order and units, and the job's status among its
// facts: its times, attempt and restart budget.
func TestJobPageSpecIsWhatTheUserWrote(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	const spec = `kind: command
name: flaky
command:
  - sh
  - -c
  - exit 3
resources:
  cpu: 500m
  memory: 1Gi
restartPolicy: OnFailure
`
	e.submit(t, "u1", "flaky-1", spec)
	e.store.Schedule(t, apitest.T0)
	task := e.store.Tasks("flaky-1")[0].ID
	e.store.Report(t, task, structs.TaskRunning, apitest.T0)
	e.store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: task, State: structs.TaskFailed, ExitCode: 3, Time: apitest.T0.Add(time.Minute)}}})
	require.Equal(t, 1, e.store.Job("flaky-1").Attempt, "restarted once")

	body := e.page(t, "u1", "/ui/jobs/flaky-1")
	m := specSection.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has a Spec section")
	assert.Equal(t, spec, html.UnescapeString(m[1]))

	got := map[string]string{}
	for _, f := range facts.FindAllStringSubmatch(body, -1) {
		got[f[1]] = html.UnescapeString(f[2])
	}
	assert.Equal(t, "2026-03-01 09:00:00", got["Started"])
	assert.Equal(t, "2", got["Attempt"])
	assert.Equal(t, "1 of 3 used", got["Restarts"])
}
