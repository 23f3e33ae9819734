package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// While its victims stop, cycle after cycle, a preemptor says whom it
// waits for and, while they have a preemption notice, until when.
func TestPreemptorSaysWhomItWaitsFor(t *testing.T) {
	h := st.New(t, st.G8("n1", "A"))
	h.Quota(u1, gpuA(8))
	h.MustSubmit(st.NewJob("low", "lu").Low().GPU("A", 8).Obj())
	h.Cycle()
	h.Advance(time.Hour)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Obj())
	h.Cycle()
	require.Equal(t, []string{"low"}, h.Victims())
	stop := h.Now
	for _, tk := range h.Tasks("low") {
		tk.NoticeUntil = stop.Add(time.Minute) // as the state sets it for a job asking a minute's notice
	}

	h.Advance(10 * time.Second)
	h.Cycle()
	assert.Empty(t, h.Victims())
	assert.Equal(t, "does not fit now; waiting for 1 preempted low-priority job(s) to stop: low; their preemption notice ends at "+
		stop.Add(time.Minute).UTC().Format(time.RFC3339)+" (in 50s)", h.Why("n").Message)
	h.Advance(time.Minute) // the notice is over; the stop grace runs
	h.Cycle()
	assert.Equal(t, "does not fit now; waiting for 1 preempted low-priority job(s) to stop: low", h.Why("n").Message)
	h.Settle()
	h.Cycle()
	assert.Equal(t, []string{"n1"}, h.NodesOf("n"))
	assert.Nil(t, h.Why("n"))
	assert.Equal(t, structs.JobPending, h.Job("low").State)
}
