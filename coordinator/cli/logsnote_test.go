package cli

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// job logs writes the job's output on stdout and the note that stopped
// tasks are not shown on stderr, so that the output piped on is the
// tasks' only.
func TestLogsNoteOnStderr(t *testing.T) {
	const token = "logs-note-admin-token-0123456789"
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
	store.Schedule(t, apitest.T0.Add(time.Minute))
	tf, err := api.ParseTokens([]byte("users: [{name: admin, token: " + token + ", admin: true}]\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("out of " + string(id) + "\n")), nil
		}}))
	t.Cleanup(srv.Close)

	var stdout, stderr bytes.Buffer
	app := App()
	app.Writer, app.ErrWriter = &stdout, &stderr
	require.NoError(t, app.RunContext(context.Background(), []string{"coordinator", "--addr", srv.URL, "--token", token, "job", "logs", "noisy-1"}))
	assert.Equal(t, ""+
		"==> noisy-1-0-a0 (replica 0, node c1) <==\nout of noisy-1-0-a0\n"+
		"==> noisy-1-1-a0-r1 (replica 1, node c1) <==\nout of noisy-1-1-a0-r1\n", stdout.String())
	assert.Equal(t, "(1 stopped task(s) of earlier attempts or replaced replicas not shown: coordinator job logs --all noisy-1 shows them)\n", stderr.String())
}
