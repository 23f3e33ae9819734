package api_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// A followed stream resumed with offset=N (job logs -f after a
// coordinator restart broke its stream) leaves out the first N bytes of
// the task's output, a file's and another server's stream's alike, so no
// line comes twice; offset is refused without follow, or not a count.
func TestFollowFromOffset(t *testing.T) {
	out := output("t", 4<<10, "the end")
	file := filepath.Join(t.TempDir(), "output.log")
	require.NoError(t, os.WriteFile(file, out, 0o600))
	for name, open := range map[string]func() io.ReadCloser{
		"file": func() io.ReadCloser {
			f, err := os.Open(file)
			require.NoError(t, err)
			return f
		},
		"stream": func() io.ReadCloser { return stream(out) },
	} {
		t.Run(name, func(t *testing.T) {
			get := endedTaskLogs(t, open)
			code, body := get("&follow=true")
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, string(out), body)
			code, body = get("&follow=true&offset=1000")
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, string(out[1000:]), body)
			code, body = get("&follow=true&offset=999999")
			require.Equal(t, http.StatusOK, code, body)
			assert.Empty(t, body, "past the end: nothing")
			for q, want := range map[string]string{
				"&offset=10":             "offset is for a followed stream: add follow=true and task=ID",
				"&follow=true&offset=-1": `offset \"-1\" is not allowed: use a byte count, 0 or more`,
				"&follow=true&offset=x":  `offset \"x\" is not allowed: use a byte count, 0 or more`,
			} {
				code, body := get(q)
				assert.Equal(t, http.StatusBadRequest, code, q)
				assert.Contains(t, body, want, q)
			}
		})
	}
}

// endedTaskLogs serves the API over a job whose one task has ended, its
// output from open, and returns a GET of that task's logs with
// query q added to ?task=ID: the status and body.
func endedTaskLogs(t *testing.T, open func() io.ReadCloser) func(q string) (int, string) {
	t.Helper()
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(`{kind: command, name: done, command: [run], resources: {cpu: "1", memory: 1Gi}}`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = "done-1"
	store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	store.Schedule(t, apitest.T0)
	task := store.Tasks(j.ID)[0].ID
	store.Report(t, task, structs.TaskRunning, apitest.T0)
	store.Report(t, task, structs.TaskSucceeded, apitest.T0)
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			if id != task {
				return nil, fs.ErrNotExist
			}
			return open(), nil
		}}))
	t.Cleanup(srv.Close)
	return func(q string) (int, string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/v1/jobs/done-1/logs?task="+string(task)+q, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+logsToken)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
}
