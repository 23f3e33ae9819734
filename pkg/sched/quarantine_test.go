package sched_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// quarantined returns node n with accelerators accels quarantined since at.
func quarantined(n *structs.Node, at time.Time, accels ...int) *structs.Node {
	for _, a := range accels {
		n.Quarantined = append(n.Quarantined, structs.Quarantine{Accel: a, Reason: "ecc", Since: at})
	}
	return n
}

// Quarantined accelerators are never given to a new task: a job goes to
// another node, or waits ("does not fit now", never "can never fit") with
// a note on the quarantined capacity.
func TestQuarantinedAcceleratorsAreNotGiven(t *testing.T) {
	h := st.New(t, quarantined(st.G8("q", "A"), time.Time{}, 0, 1, 2, 3, 4, 5), st.G8("o", "A"))
	h.Quota(u1, gpuA(64))
	h.MustSubmit(st.NewJob("four", "u1").GPU("A", 4).Obj())
	h.Cycle()
	assert.Equal(t, []string{"o"}, h.NodesOf("four"), "q has only 2 accelerators out of quarantine")

	require.NoError(t, h.Submit(st.NewJob("eight", "u1").GPU("A", 8).Obj()), "a quarantine never makes a job refused")
	h.MustSubmit(st.NewJob("two", "u1").GPU("A", 2).Obj())
	h.Cycle()
	assert.Empty(t, h.Tasks("eight"))
	two := h.Tasks("two")
	require.Len(t, two, 1)
	assert.Equal(t, "q", string(two[0].Node), "best fit: the two healthy accelerators of q")
	assert.Equal(t, []int{6, 7}, two[0].Accels.Indices())

	why := h.Why("eight")
	require.NotNil(t, why)
	assert.False(t, why.NeverFits)
	assert.Contains(t, why.Message, "does not fit now")
	assert.Contains(t, why.Message, "1 with too few accelerators out of quarantine")
	assert.Contains(t, why.Message, "6 A accelerators on 1 node(s) are quarantined after failed preflights (an admin returns them with coordinator node release)")
}

// A task already on an accelerator when it was quarantined may run on;
// one placed there afterwards is an invariant violation.
func TestInvariantQuarantinedAccelerator(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	task := func(id string, at time.Time) *structs.Task {
		return &structs.Task{ID: structs.TaskID(id), Job: "j", Node: "q", State: structs.TaskRunning, Accels: 1,
			Resources: structs.Resources{Accels: 1, AccelType: "A"}, ScheduledAt: at}
	}
	snap := func(tk *structs.Task) *sched.Snapshot {
		return &sched.Snapshot{Nodes: []*structs.Node{quarantined(st.G8("q", "A"), t0.Add(time.Minute), 0)}, Tasks: []*structs.Task{tk}}
	}
	require.NoError(t, sched.CheckInvariants(snap(task("before", t0))))
	err := sched.CheckInvariants(snap(task("after", t0.Add(2*time.Minute))))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node q: task after was placed on accelerator 0 after it was quarantined")
}
