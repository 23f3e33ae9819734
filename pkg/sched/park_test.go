package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A service scaled to 0 (kubectl scale --replicas=0, Nomad count = 0) is
// parked: no replica, no quota, nothing for the scheduler to place, time
// out or explain, whatever its minAvailable. Scaled up again it is placed
// under the usual rules: minAvailable first, within quota.
func TestServiceParkedAtZero(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(8))
	h.Quota(u2, gpuA(8))
	h.MustSubmit(st.NewJob("s", "u1").Service(4, 3).GPU("A", 1).Obj())
	h.Cycle()
	require.Len(t, h.Tasks("s"), 4)
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))

	require.EqualError(t, h.Scale("s", 2), "replicas 2 is below minAvailable 3: scale to 3 or more, or to 0 to park the service")
	require.NoError(t, h.Scale("s", 0))
	j := h.Job("s")
	assert.Equal(t, structs.JobRunning, j.State)
	assert.Equal(t, "scaled to 0 replicas", j.Reason)
	assert.Equal(t, 3, j.MinAvailable, "the spec stays")
	assert.Empty(t, h.Tasks("s"))
	assert.Zero(t, h.Usage(u1, "gpu/A"))
	assert.Nil(t, j.Charged)
	assert.NotContains(t, h.Pending(), j, "nothing to place")

	// Hours later: no timeout, no placement, no why; its room is others'.
	h.Advance(2 * time.Hour)
	h.MustSubmit(st.NewJob("hog", "u2").GPU("A", 6).Node("n1").Obj())
	p := h.Cycle()
	assert.Empty(t, p.Timeouts)
	assert.NotContains(t, p.Pending, j.ID)
	assert.Len(t, h.Tasks("hog"), 1)
	assert.Equal(t, structs.JobRunning, h.Job("s").State)

	// Up again: pending as at submit; 2 free GPUs are fewer than
	// minAvailable 3, so nothing starts until the hog ends.
	require.EqualError(t, h.Scale("s", 2), "replicas 2 is below minAvailable 3: scale to 3 or more, or to 0 to park the service")
	require.NoError(t, h.Scale("s", 4))
	assert.Equal(t, structs.JobPending, h.Job("s").State)
	assert.Equal(t, h.Now, h.Job("s").PendingSince, "pendingTimeout counts from the scale")
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"), "charged again at once")
	h.Cycle()
	assert.Empty(t, h.Tasks("s"))
	require.NotNil(t, h.Why("s"))
	h.Finish("hog", structs.JobSucceeded)
	h.Cycle()
	assert.Len(t, h.Tasks("s"), 4)
	assert.Equal(t, structs.JobRunning, h.Job("s").State)
	assert.Equal(t, int64(4), h.Usage(u1, "gpu/A"))
}
