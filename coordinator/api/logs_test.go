package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

const logsToken = "logs-admin-token-0123456789"

// logsEnv serves the API over a store holding job noisy-1 with replicas
// tasks placed; out(replica) is each task's output (nil: none kept).
func logsEnv(t *testing.T, replicas int, out func(replica int) io.ReadCloser) (*httptest.Server, []*structs.Task) {
	t.Helper()
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(fmt.Sprintf(`{kind: command, name: noisy, replicas: %d, command: [run], resources: {cpu: "1", memory: 1Gi}}`, replicas)))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = "noisy-1"
	store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	store.Schedule(t, apitest.T0)
	tasks := store.Tasks(j.ID)
	require.Len(t, tasks, replicas)
	index := map[structs.TaskID]int{}
	for _, tk := range tasks {
		index[tk.ID] = tk.Index
	}
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	h := api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			if rc := out(index[id]); rc != nil {
				return rc, nil
			}
			return nil, fs.ErrNotExist
		}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, tasks
}

// getLogs returns GET /v1/jobs/noisy-1/logs (with query q).
func getLogs(t *testing.T, srv *httptest.Server, q string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/v1/jobs/noisy-1/logs"+q, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+logsToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// output is size bytes of numbered lines ("line 0000001 of <name>") and
// then a last line.
func output(name string, size int, last string) []byte {
	b := make([]byte, 0, size+64)
	for i := 1; len(b) < size; i++ {
		b = append(b, "line "...)
		n := strconv.Itoa(i)
		b = append(b, "0000000"[len(n):]...)
		b = append(append(append(b, n...), " of "...), name...)
		b = append(b, '\n')
	}
	return append(append(b, last...), '\n')
}

// stream is a remote task's output: a reader that cannot seek.
func stream(b []byte) io.ReadCloser { return io.NopCloser(struct{ io.Reader }{bytes.NewReader(b)}) }

// TestLogsKeepTheEnd: a task's output larger than the limit shows its end
// (where the errors are), from a whole line, after a line saying what was
// cut and how to see all of it.
func TestLogsKeepTheEnd(t *testing.T) {
	out := output("t", 12<<20, "Error: the real cause")
	path := filepath.Join(t.TempDir(), "output.log")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	for name, open := range map[string]func() io.ReadCloser{
		"local file": func() io.ReadCloser {
			f, err := os.Open(path)
			require.NoError(t, err)
			return f
		},
		"remote stream": func() io.ReadCloser { return stream(out) },
	} {
		t.Run(name, func(t *testing.T) {
			srv, tasks := logsEnv(t, 1, func(int) io.ReadCloser { return open() })
			body := getLogs(t, srv, "")
			marker, shown, ok := strings.Cut(body, "\n")
			require.True(t, ok)
			cut := len(out) - len(shown)
			mib := strings.TrimSuffix(fmt.Sprintf("%.1f", float64(cut)/(1<<20)), ".0")
			assert.Equal(t, fmt.Sprintf("(… %s MiB cut: showing the last 8 MiB; coordinator job logs -f --task %s noisy-1 shows all)", mib, tasks[0].ID), marker)
			assert.LessOrEqual(t, len(shown), 8<<20)
			assert.Greater(t, len(shown), 8<<20-100, "at most a partial line less than the limit")
			assert.True(t, strings.HasSuffix(shown, "\nError: the real cause\n"), "the end is shown")
			assert.True(t, strings.HasPrefix(shown, "line "), "from a whole line: %.40q", shown)
			assert.True(t, string(out[cut:]) == shown, "the shown tail is the output's end")
		})
	}
}

// TestLogsShareTheLimit: with several tasks, a noisy one does not hide
// the others: each shows the end of its own output.
func TestLogsShareTheLimit(t *testing.T) {
	noisy := output("noisy", 12<<20, "noisy: the end")
	quiet := output("quiet", 100, "quiet: the end")
	srv, tasks := logsEnv(t, 3, func(replica int) io.ReadCloser {
		switch replica {
		case 0:
			return stream(noisy)
		case 1:
			return stream(quiet)
		}
		return nil
	})
	body := getLogs(t, srv, "")
	assert.LessOrEqual(t, len(body), 8<<20+1000)
	sections := strings.Split(body, "==> ")
	require.Len(t, sections, 4, "a header per task")
	// Three tasks: a third of the limit each, or what is left after the
	// ones before.
	lines := strings.SplitN(sections[1], "\n", 3)
	require.Len(t, lines, 3)
	assert.Equal(t, fmt.Sprintf("%s (replica 0, node %s) <==", tasks[0].ID, tasks[0].Node), lines[0])
	assert.Regexp(t, `^\(… 9\.\d MiB cut: showing the last 2\.7 MiB; coordinator job logs -f --task `+string(tasks[0].ID)+` noisy-1 shows all\)$`, lines[1])
	assert.True(t, strings.HasSuffix(lines[2], "\nnoisy: the end\n"), "the noisy task's end is shown")
	assert.Equal(t, fmt.Sprintf("%s (replica 1, node %s) <==\n%s", tasks[1].ID, tasks[1].Node, quiet), sections[2], "a small output is shown whole, without a marker")
	assert.Contains(t, sections[3], "(no output: task "+string(tasks[2].ID)+" has not started yet)")

	// One task asked for gets the whole limit.
	body = getLogs(t, srv, "?task="+string(tasks[0].ID))
	marker, _, _ := strings.Cut(body, "\n")
	assert.Regexp(t, `^\(… 4(\.\d)? MiB cut: showing the last 8 MiB; `, marker)
	assert.True(t, strings.HasSuffix(body, "\nnoisy: the end\n"))
}

// TestLogsUnderTheLimitUncut: output within the limit comes whole.
func TestLogsUnderTheLimitUncut(t *testing.T) {
	out := output("t", 8<<20-100, "the end")
	require.LessOrEqual(t, len(out), 8<<20)
	srv, _ := logsEnv(t, 1, func(int) io.ReadCloser { return stream(out) })
	assert.True(t, string(out) == getLogs(t, srv, ""), "the whole output, as it is")
}

// TestLogsOfAJobWithNoTask: a job not placed yet has no output, and the
// answer says so and where to look; once requeued, which attempt (counted
// from 1) waits to be placed.
func TestLogsOfAJobWithNoTask(t *testing.T) {
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(`{kind: command, name: noisy, command: [run], restartPolicy: OnFailure, resources: {cpu: "1", memory: 1Gi}}`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = "noisy-1"
	store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0}) // no scheduling cycle: Pending, no task
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(structs.TaskID, bool) (io.ReadCloser, error) { return nil, fs.ErrNotExist }}))
	t.Cleanup(srv.Close)
	assert.Equal(t, "(no output: job noisy-1 has no task yet (Pending); coordinator job why noisy-1 says why)\n", getLogs(t, srv, ""))

	store.Schedule(t, apitest.T0)
	store.Report(t, "noisy-1-0-a0", structs.TaskRunning, apitest.T0)
	store.Report(t, "noisy-1-0-a0", structs.TaskFailed, apitest.T0)
	require.Equal(t, structs.JobPending, store.Job("noisy-1").State)
	assert.Equal(t, "(no output: job noisy-1 has no task yet in attempt 2 (Pending); coordinator job why noisy-1 says why)\n"+
		wire.HiddenTasksNote(1, "noisy-1")+"\n", getLogs(t, srv, ""))
}

// TestLogsCurrentAttempt: by default the logs are the current attempt's
// (each replica's newest task), saying how many older tasks are left
// out; all=true shows every task; task takes a replica index too.
func TestLogsCurrentAttempt(t *testing.T) {
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(`{kind: service, name: noisy, replicas: 2, command: [run], resources: {cpu: "1", memory: 1Gi}}`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = "noisy-1"
	store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	store.Schedule(t, apitest.T0)
	store.Report(t, "noisy-1-1-a0", structs.TaskFailed, apitest.T0)
	store.Schedule(t, apitest.T0.Add(time.Minute)) // replica 1 placed again: noisy-1-1-a0-r1
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			return stream([]byte("out of " + string(id) + "\n")), nil
		}}))
	t.Cleanup(srv.Close)

	assert.Equal(t, ""+
		"==> noisy-1-0-a0 (replica 0, node c1) <==\nout of noisy-1-0-a0\n"+
		"==> noisy-1-1-a0-r1 (replica 1, node c1) <==\nout of noisy-1-1-a0-r1\n"+
		"(1 stopped task(s) of earlier attempts or replaced replicas not shown: coordinator job logs --all noisy-1 shows them)\n",
		getLogs(t, srv, ""))
	// With hidden=header the note is left to the client, which the
	// header tells how many are not shown.
	assert.Equal(t, ""+
		"==> noisy-1-0-a0 (replica 0, node c1) <==\nout of noisy-1-0-a0\n"+
		"==> noisy-1-1-a0-r1 (replica 1, node c1) <==\nout of noisy-1-1-a0-r1\n",
		getLogs(t, srv, "?hidden=header"))
	var notes bytes.Buffer
	cl := client.New(srv.URL, logsToken)
	require.NoError(t, cl.LogsWith(context.Background(), "noisy-1", client.LogOptions{Notes: &notes}, io.Discard))
	assert.Equal(t, "(1 stopped task(s) of earlier attempts or replaced replicas not shown: coordinator job logs --all noisy-1 shows them)\n", notes.String())
	assert.Equal(t, ""+
		"==> noisy-1-0-a0 (replica 0, node c1) <==\nout of noisy-1-0-a0\n"+
		"==> noisy-1-1-a0 (replica 1, node c1) <==\nout of noisy-1-1-a0\n"+
		"==> noisy-1-1-a0-r1 (replica 1, node c1) <==\nout of noisy-1-1-a0-r1\n",
		getLogs(t, srv, "?all=true"))
	assert.Equal(t, "out of noisy-1-1-a0-r1\n", getLogs(t, srv, "?task=1"), "a replica index: its newest task")
	assert.Equal(t, "out of noisy-1-1-a0\n", getLogs(t, srv, "?task=noisy-1-1-a0"))

	for q, want := range map[string]string{
		"?task=7":    "job noisy-1 has no task of replica 7 (replicas 0 to 1; coordinator job status noisy-1 lists its tasks)",
		"?task=nope": "job noisy-1 has no task nope: give a task ID or a replica index (coordinator job status noisy-1 lists its tasks)",
	} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/v1/jobs/noisy-1/logs"+q, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+logsToken)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, q)
		assert.Contains(t, string(b), want, q)
	}
}

// TestLogsOfATaskThatNeverStarted: a task that ended before it started
// (here its process could not start; a failed cache warm-up alike) has no output because it never ran,
// and the answer says so and why, not that a server is down.
func TestLogsOfATaskThatNeverStarted(t *testing.T) {
	store := apitest.NewStore()
	store.Load(t, apitest.Cluster)
	s, err := structs.ParseJobSpec([]byte(`{kind: command, name: noisy, command: [run], resources: {cpu: "1", memory: 1Gi}}`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID = "noisy-1"
	store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	store.Schedule(t, apitest.T0)
	store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: "noisy-1-0-a0", State: structs.TaskFailed, ExitCode: 127,
		Message: "exec: \"run\": executable file not found in $PATH", Time: apitest.T0}}})
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + logsToken + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(structs.TaskID, bool) (io.ReadCloser, error) { return nil, fs.ErrNotExist }}))
	t.Cleanup(srv.Close)
	assert.Equal(t, "(no output: task noisy-1-0-a0 failed before it started: exec: \"run\": executable file not found in $PATH)\n", getLogs(t, srv, ""))
}
