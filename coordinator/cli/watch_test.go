package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// job list --watch prints the table, then a row for each job that is new
// or changed, in the table's columns, until interrupted.
func TestJobListWatch(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: a, priority: low, resources: {cpu: "1", memory: 1Gi}}`))

	var out syncBuffer
	app := App()
	app.Writer, app.ErrWriter = &out, &out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "job", "list", "--watch", "--interval", "5ms"})
	}()
	lines := func(n int) func() bool {
		return func() bool { return strings.Count(out.String(), "\n") >= n }
	}
	require.Eventually(t, lines(2), 5*time.Second, 5*time.Millisecond)
	e.Store.Schedule(t, apitest.T0)
	require.Eventually(t, lines(3), 5*time.Second, 5*time.Millisecond)
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: longer-name, priority: low, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Report(t, "a-00001-0-a0", structs.TaskRunning, apitest.T0)
	require.Eventually(t, lines(5), 5*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	got := strings.Split(out.String(), "\n")
	require.Len(t, got, 6, out.String())
	assert.Equal(t, []string{
		"ID       NAME  KIND     OWNER  PROJECT  PRIORITY  STATE    REPLICAS  RESOURCES         AGE    DURATION",
		"a-00001  a     command  u1     -        low       Pending  1         cpu=1 memory=1Gi  3m12s  -",
		"a-00001  a     command  u1     -        low       Scheduled  1         cpu=1 memory=1Gi  3m12s  -",
	}, got[:3])
	assert.ElementsMatch(t, []string{
		"a-00001  a     command  u1     -        low       Running  1         cpu=1 memory=1Gi  3m12s  3m12s",
		"longer-name-00002  longer-name  command  u1     -        low       Pending  1         cpu=1 memory=1Gi  3m12s  -",
	}, got[3:5], "both changes, in the first table's columns")
}

// job list --watch --state Running prints the change that takes a job out
// of that state (its row as it is now), once.
func TestJobListWatchLeavingTheState(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: a, priority: low, resources: {cpu: "1", memory: 1Gi}}`))
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "a-00001-0-a0", structs.TaskRunning, apitest.T0)

	var out syncBuffer
	app := App()
	app.Writer, app.ErrWriter = &out, &out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "job", "list", "--watch", "--state", "Running", "--interval", "5ms"})
	}()
	lines := func(n int) func() bool {
		return func() bool { return strings.Count(out.String(), "\n") >= n }
	}
	require.Eventually(t, lines(2), 5*time.Second, 5*time.Millisecond)
	e.Store.Report(t, "a-00001-0-a0", structs.TaskSucceeded, apitest.T0.Add(time.Minute))
	require.Eventually(t, lines(3), 5*time.Second, 5*time.Millisecond)
	require.Never(t, lines(4), 50*time.Millisecond, 5*time.Millisecond, "the row that left is printed once")
	cancel()
	require.NoError(t, <-done)
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, got, 3, out.String())
	assert.Contains(t, got[1], "Running")
	assert.Contains(t, got[2], "a-00001")
	assert.Contains(t, got[2], "Succeeded")
}
