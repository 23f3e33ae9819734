package sched_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRandomStreams drives random clusters with random job streams (seeded,
// reproducible: the failing seed is in the subtest name) and checks on every
// cycle that the invariants hold (the harness runs CheckInvariants and
// CheckUsage after every step; usage accrues as time passes, so jobs are
// ordered by fair share) and that Schedule is deterministic: the same
// snapshot gives the same plan, whatever the order of the pending list.
func TestRandomStreams(t *testing.T) {
	seeds := 40
	if s := os.Getenv("ATOM_RANDOM_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			randomStream(t, seed, 60)
		})
	}
}

func randomStream(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 99))
	types := []string{"A", "B"}
	var nodes []*structs.Node
	for i := range 3 + r.IntN(6) {
		name := fmt.Sprintf("n%d", i)
		switch r.IntN(4) {
		case 0:
			nodes = append(nodes, st.CPUNode(name, 32, 128))
		default:
			n := st.GPUNode(name, types[r.IntN(2)], []int64{2, 4, 8}[r.IntN(3)])
			if r.IntN(3) == 0 {
				n.Tags["fabric"] = "ib"
			}
			if r.IntN(4) == 0 {
				n.Pool = "vision"
			}
			nodes = append(nodes, n)
		}
	}
	h := st.New(t, nodes...)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u0", "u1"}, LendIdle: r.IntN(2) == 0})
	for u := range 3 {
		h.Quota(structs.UserScope(structs.UserID(fmt.Sprintf("u%d", u))), structs.ResourceList{
			"gpu/A": int64(r.IntN(24)), "gpu/B": int64(r.IntN(24)), "gpu": 8, "cpu": 64000, "memory": 256 * st.Gi})
	}
	h.Quota(structs.ProjectScope("vision"), structs.ResourceList{"gpu/A": 8, "gpu/B": 8, "cpu": 16000, "memory": 64 * st.Gi})

	next := 0
	for range steps {
		switch op := r.IntN(10); {
		case op < 5: // submit
			next++
			b := st.NewJob(fmt.Sprintf("j%03d", next), fmt.Sprintf("u%d", r.IntN(3)))
			switch r.IntN(3) {
			case 0:
				b.Low()
			case 1:
				if r.IntN(2) == 0 {
					b.Project("vision").High()
				}
			}
			if r.IntN(3) == 0 {
				b.Project("vision")
			}
			switch r.IntN(5) {
			case 0:
				b.CPU(int64(1+r.IntN(16)), int64(1+r.IntN(32)))
			case 1:
				b.MPI(2+r.IntN(3)).GPU(types[r.IntN(2)], int64(1+r.IntN(8)))
				if r.IntN(2) == 0 {
					b.Spread()
				}
			case 2:
				n := 1 + r.IntN(4)
				b.Service(n, 1+r.IntN(n)).GPU("", 1)
			default:
				b.GPU(types[r.IntN(2)], int64(1+r.IntN(8)))
				if r.IntN(3) == 0 {
					b.Fallback(1, types[r.IntN(2)], int64(1+r.IntN(4))).DowngradeAfter(time.Minute)
				}
			}
			if r.IntN(6) == 0 {
				b.Selector("fabric=ib")
			}
			if r.IntN(5) == 0 {
				b.Timeout(time.Duration(1+r.IntN(10)) * time.Minute)
			}
			_ = h.Submit(b.Obj()) // refusals are fine; they must change nothing (checked)
		case op < 7: // end a running job
			var running []string
			for id, j := range h.Snap.Jobs {
				if j.State == structs.JobRunning {
					running = append(running, string(id))
				}
			}
			if len(running) > 0 {
				slices.Sort(running)
				h.Finish(running[r.IntN(len(running))], []structs.JobState{structs.JobSucceeded, structs.JobFailed, structs.JobCancelled}[r.IntN(3)])
			}
		case op < 8:
			h.Settle()
		default:
			h.Advance(time.Duration(r.IntN(120)) * time.Second)
			h.Accrue() // fair-share usage, checked against its tasks
		}
		checkDeterministic(t, h, r)
		h.Cycle()
	}
}

func checkDeterministic(t *testing.T, h *st.Harness, r *rand.Rand) {
	t.Helper()
	pending := h.Pending()
	in := sched.Input{Pending: pending, Now: h.Now, Seed: 7}
	a := sched.Schedule(h.Snap, in)
	shuffled := slices.Clone(pending)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	in.Pending = shuffled
	b := sched.Schedule(h.Snap, in)
	require.Equal(t, a, b, "same snapshot, same plan")
}
