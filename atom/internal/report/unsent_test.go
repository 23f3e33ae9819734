package report_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// A final report no coordinator took in time (every server down) is left
// whole in the Unsent file, for the local backend to send on; without
// one it is only given up.
func TestFinalLeftUnsent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	r := report.New(addr, "t-0-a", "tok", time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, r.FinalDisconnected(ctx, structs.TaskFailed, 143, "outage"), "gave up")

	r.Unsent = filepath.Join(t.TempDir(), "unsent-report.json")
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = r.FinalDisconnected(ctx, structs.TaskFailed, 143, "atom lost the coordinator for 15s and stopped the task")
	require.ErrorContains(t, err, "gave up, left in "+r.Unsent+" for the coordinator")
	b, err := os.ReadFile(r.Unsent)
	require.NoError(t, err)
	var ev wire.Heartbeat
	require.NoError(t, json.Unmarshal(b, &ev))
	assert.Equal(t, structs.TaskFailed, ev.State)
	assert.Equal(t, 143, ev.ExitCode)
	assert.Equal(t, structs.ReasonDisconnected, ev.Reason)
	assert.Equal(t, "atom lost the coordinator for 15s and stopped the task", ev.Message)
	assert.False(t, ev.Time.IsZero())
	assert.NoFileExists(t, r.Unsent+".tmp")
}
