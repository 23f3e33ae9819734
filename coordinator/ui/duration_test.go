package ui_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// The Jobs page's Duration of a job that failed, restarted and then
// succeeded runs from its first start to its end, as job list's DURATION;
// its page counts its attempts from 1, as the CLI does.
func TestJobsDurationFromTheFirstStart(t *testing.T) {
	e := newEnv(t, apitest.Cluster)
	id := e.submit(t, "u1", "mpi-1", `{kind: command, name: mpi, restartPolicy: OnFailure, command: [run], resources: {cpu: "1", memory: 1Gi}}`)
	require.Len(t, e.store.Schedule(t, apitest.T0).Placed, 1)
	first := e.store.Tasks(id)[0].ID
	e.store.Report(t, first, structs.TaskRunning, apitest.T0.Add(time.Minute))
	e.store.Report(t, first, structs.TaskFailed, apitest.T0.Add(11*time.Minute))
	require.Len(t, e.store.Schedule(t, apitest.T0.Add(20*time.Minute)).Placed, 1)
	tasks := e.store.Tasks(id)
	last := tasks[len(tasks)-1].ID
	e.store.Report(t, last, structs.TaskRunning, apitest.T0.Add(21*time.Minute))
	e.store.Report(t, last, structs.TaskSucceeded, apitest.T0.Add(31*time.Minute))
	require.Equal(t, structs.JobSucceeded, e.store.Job(id).State)

	body := e.page(t, "u1", "/ui/jobs?sort=id")
	row := regexp.MustCompile(`(?s)mpi-1</a>.*?</tr>`).FindString(body)
	require.NotEmpty(t, row, body)
	assert.Regexp(t, `<td class="num">30m00s</td>\s*</tr>`, row, "not 10m00s, the last attempt alone")

	body = e.page(t, "u1", "/ui/jobs/"+string(id))
	assert.Contains(t, body, "<dt>Attempt</dt><dd>2</dd>")
	for task, attempt := range map[structs.TaskID]string{first: "1", last: "2"} {
		assert.Regexp(t, `<td>`+regexp.QuoteMeta(string(task))+`</td><td>0</td><td class="num">`+attempt+`</td>`, body)
	}
}
