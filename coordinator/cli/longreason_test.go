package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// A task's long failure message (a Spark driver's 300 characters) is cut
// in the task table, so its STATE column stays readable; job status's
// State line keeps the whole reason (and -o json|yaml the whole job).
func TestLongReasonsStayOutOfTheTable(t *testing.T) {
	msg := "pyspark.errors.exceptions.captured.AnalysisException: [PATH_NOT_FOUND] Path does not exist: file:/" + strings.Repeat("very/long/path/", 15) + "points. SQLSTATE: 42K03"
	require.Greater(t, len(msg), 250)
	reason := "replica 0 failed with exit code 1: " + msg
	j := &structs.Job{ID: "clean-lidar-x7k2p", Name: "clean-lidar", Kind: structs.KindSpark, Replicas: 1, State: structs.JobFailed, Reason: reason}
	tk := &structs.Task{ID: "clean-lidar-x7k2p-0-ab12", Job: j.ID, Node: "cpu-1", State: structs.TaskFailed, ExitCode: 1, Message: msg}
	var out bytes.Buffer
	printJob(&out, &wire.JobStatus{Job: j, Tasks: []*structs.Task{tk}})
	lines := strings.Split(out.String(), "\n")
	assert.Contains(t, lines, "State:      Failed: "+reason, "the whole reason on the State line")
	var task string
	for _, l := range lines {
		if strings.HasPrefix(l, string(tk.ID)) {
			task = l
		}
	}
	assert.Contains(t, task, "  Failed (exit 1): pyspark.errors.exceptions.captured.Analy...  ", "the STATE cell: %q", task)
	assert.Less(t, len(task), 140, "the task line: %q", task)
}
