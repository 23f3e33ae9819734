package sched_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRandomVictimChoice: on random clusters of low work (commands,
// gangs, services) started at random times under random pool minimum
// runtimes, a normal job's preemption (seeded, reproducible) must:
//   - evict never more than needed: the preemptor fits with every victim
//     gone, and no longer fits if any one of them (a job, or one replica
//     of a service) stayed;
//   - stop a service's replicas, a gang whole;
//   - never stop work younger than its pool's minimum runtime; when it
//     waits for such work, it could not fit with all older low work gone
//     and could with all low work gone;
//   - and happen whenever removing all low work would make room.
func TestRandomVictimChoice(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			randomVictims(t, seed)
		})
	}
}

func randomVictims(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 14))
	var nodes []*structs.Node
	for i := range 2 + r.IntN(4) {
		nodes = append(nodes, st.GPUNode(fmt.Sprintf("n%d", i), "A", []int64{2, 4, 8}[r.IntN(3)]))
	}
	h := st.New(t, nodes...)
	minRun := []time.Duration{0, 0, 5 * time.Minute, 30 * time.Minute}[r.IntN(4)]
	h.Pool(&structs.Pool{Name: structs.PublicPool, MinRuntime: structs.Duration(minRun)})
	h.Quota(u1, gpuA(64))
	for i := range 2 + r.IntN(6) {
		b := st.NewJob(fmt.Sprintf("l%d", i), "lu").Low()
		switch r.IntN(3) {
		case 0:
			n := 1 + r.IntN(6)
			b.Service(n, 1).GPU("A", int64(1+r.IntN(2)))
		case 1:
			b.MPI(2).GPU("A", int64(1+r.IntN(4)))
		default:
			b.GPU("A", int64(1+r.IntN(8)))
		}
		_ = h.Submit(b.Obj())
		h.Cycle()
		h.Advance(time.Duration(r.IntN(20)) * time.Minute)
	}
	b := st.NewJob("pre", "u1")
	if r.IntN(3) == 0 {
		b.MPI(2).GPU("A", int64(1+r.IntN(4)))
	} else {
		b.GPU("A", int64(1+r.IntN(8)))
	}
	if h.Submit(b.Obj()) != nil {
		return // can never fit
	}
	p := sched.Schedule(h.Snap, sched.Input{Pending: h.Pending(), Now: h.Now})
	fits := func(gone func(*structs.Task) bool) bool { return fitsWithout(h, gone) }
	low := func(tk *structs.Task) bool { return tk.Priority == structs.PriorityLow }
	young := func(tk *structs.Task) bool {
		start := tk.StartedAt
		if tk.ScheduledAt.After(start) {
			start = tk.ScheduledAt
		}
		return low(tk) && minRun > 0 && start.Add(minRun).After(h.Now)
	}
	why := p.Pending["pre"]
	if len(p.Preemptions) == 0 {
		if why != nil && strings.Contains(why.Waiting, "before its pool's minimum runtime") {
			require.False(t, fits(func(tk *structs.Task) bool { return low(tk) && !young(tk) }), "it waits though older low work would make room")
			require.True(t, fits(low), "it waits for young work that would not make room")
		} else if !slices.ContainsFunc(p.Placements, func(pl sched.Placement) bool { return pl.Job == "pre" }) {
			require.False(t, fits(low), "no preemption though evicting low work makes room: %v", why)
		}
		return
	}
	stopped := map[structs.TaskID]bool{}
	var units [][]structs.TaskID
	for _, pr := range p.Preemptions {
		require.Equal(t, structs.JobID("pre"), pr.Preemptor)
		j := h.Job(string(pr.Victim))
		live := liveIDs(h, j.ID)
		switch {
		case pr.Replicas:
			require.Equal(t, structs.KindService, j.Kind, "only a service loses replicas")
			require.Less(t, len(pr.Tasks), len(live), "some replicas run on")
		default:
			require.ElementsMatch(t, live, pr.Tasks, "job %s goes whole", j.ID)
		}
		for _, id := range pr.Tasks {
			stopped[id] = true
			if j.Kind == structs.KindService {
				units = append(units, []structs.TaskID{id})
			}
		}
		if j.Kind != structs.KindService {
			units = append(units, pr.Tasks)
		}
	}
	for _, tk := range h.Snap.Tasks {
		if stopped[tk.ID] {
			require.False(t, young(tk), "task %s is younger than its pool's minimum runtime", tk.ID)
		}
	}
	require.True(t, fits(func(tk *structs.Task) bool { return stopped[tk.ID] }), "the preemptor fits with its victims gone")
	for _, u := range units {
		require.False(t, fits(func(tk *structs.Task) bool { return stopped[tk.ID] && !slices.Contains(u, tk.ID) }),
			"more than needed: the preemptor fits with %v kept", u)
	}
}

// liveIDs lists job id's tasks that hold resources and are not stopping.
func liveIDs(h *st.Harness, id structs.JobID) []structs.TaskID {
	var out []structs.TaskID
	for _, tk := range h.Snap.Tasks {
		if tk.Job == id && tk.State.HoldsResources() && tk.State != structs.TaskStopping {
			out = append(out, tk.ID)
		}
	}
	return out
}

// fitsWithout reports whether job "pre" is placed, without preempting,
// on h's snapshot with the tasks gone removes taken away and every other
// low task made normal (nothing left to preempt).
func fitsWithout(h *st.Harness, gone func(*structs.Task) bool) bool {
	snap := *h.Snap
	snap.Tasks = nil
	snap.Reservations = nil
	snap.Jobs = map[structs.JobID]*structs.Job{}
	for id, j := range h.Snap.Jobs {
		jj := *j
		if jj.Priority == structs.PriorityLow {
			jj.Priority = structs.PriorityNormal
		}
		snap.Jobs[id] = &jj
	}
	for _, tk := range h.Snap.Tasks {
		if gone(tk) {
			continue
		}
		tt := *tk
		if tt.Priority == structs.PriorityLow {
			tt.Priority = structs.PriorityNormal
		}
		snap.Tasks = append(snap.Tasks, &tt)
	}
	p := sched.Schedule(&snap, sched.Input{Pending: []*structs.Job{snap.Jobs["pre"]}, Now: h.Now})
	return slices.ContainsFunc(p.Placements, func(pl sched.Placement) bool { return pl.Job == "pre" })
}
