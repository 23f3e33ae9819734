package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A batch job waiting out its restart back-off names the attempt it waits
// to start as job events count it (from 1: its first run was attempt 1)
// and which restart of its budget that is: a preemption before it was not
// the job's fault and used none.
func TestBackoffWhyNamesTheAttemptAndTheRestart(t *testing.T) {
	h := st.New(t, st.C64("c1"))
	j := st.NewJob("flaky", "u1").Low().CPU(1, 1).Obj()
	j.RestartPolicy = structs.RestartOnFailure
	j.Attempt, j.Preemptions = 2, 1 // preempted once, then failed once
	j.BackoffUntil = h.Now.Add(20 * time.Second)
	h.MustSubmit(j)

	h.Cycle()
	require.Empty(t, h.Last.Placements, "not before the back-off ends")
	first := h.Why("flaky").Message
	assert.Equal(t, "restart back-off: attempt 3 (restart 1 of 3) waits until 2026-01-01T00:00:20Z (in 20s)", first)

	h.Advance(5 * time.Second)
	h.Cycle()
	later := h.Why("flaky").Message
	assert.Equal(t, "restart back-off: attempt 3 (restart 1 of 3) waits until 2026-01-01T00:00:20Z (in 15s)", later)
	assert.Equal(t, "restart back-off: attempt 3 (restart 1 of 3) waits until 2026-01-01T00:00:20Z", sched.Steady(first))
	assert.Equal(t, sched.Steady(first), sched.Steady(later), "the same reason, only the countdown moved")
}

// Every why-pending message that counts down to a time is steady without
// its countdown, and only its countdown changes while the reason stays.
func TestSteadyLeavesOutOnlyTheCountdown(t *testing.T) {
	h := minRuntimeHarness(t)
	h.MustSubmit(st.NewJob("n", "u1").GPU("A", 8).Node("n2").Obj())
	h.Cycle()
	first := h.Why("n").Message
	require.Contains(t, first, "earliest at 2026-01-01T01:09:00Z (in 9m0s)")
	h.Advance(8*time.Minute + 59*time.Second)
	h.Cycle()
	later := h.Why("n").Message
	require.Contains(t, later, "earliest at 2026-01-01T01:09:00Z (in 1s)")
	assert.Equal(t, sched.Steady(first), sched.Steady(later))
	assert.Equal(t, strings.Replace(first, " (in 9m0s)", "", 1), sched.Steady(first), "nothing else left out")

	for _, msg := range []string{"waiting for quota; in use 8 (in 2 pools)", "at 09:00 (in 5 min)", "gang needs 5 replicas"} {
		assert.Equal(t, msg, sched.Steady(msg), "not a countdown")
	}
	assert.Equal(t, "placed again at 2026-01-01T00:00:10Z; earliest at 2026-01-01T02:00:00Z",
		sched.Steady("placed again at 2026-01-01T00:00:10Z (in 0s); earliest at 2026-01-01T02:00:00Z (in 1h59m50s)"))
}
