package sched_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestVolumeRandomStreams drives random jobs of every priority naming
// random claims over two kubernetes clusters and a local one (seeded:
// the failing seed is in the subtest name). On every cycle: the
// invariants hold (one writer per claim and cluster, checked by the
// harness), plans are deterministic, every placed job with volumes is in
// a cluster holding all its claims, and every job preempted for a
// volume-waiting job is low while the preemptor is not.
func TestVolumeRandomStreams(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			volumeStream(t, seed, 80)
		})
	}
}

func volumeStream(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 7))
	var nodes []*structs.Node
	for i, cl := range []structs.ClusterID{"a", "a", "b", "b", "b", "c"} {
		n := st.G8(fmt.Sprintf("%s%d", cl, i), "A")
		n.Cluster = cl
		nodes = append(nodes, n)
	}
	h := st.New(t, nodes...)
	h.Quota(u1, structs.ResourceList{"gpu/A": 48})
	claims := []string{"data", "logs", "out"}
	h.Snap.Volumes = map[structs.ClusterID]map[string]bool{"a": {}, "b": {}}
	for _, c := range claims {
		for _, cl := range []structs.ClusterID{"a", "b"} {
			if r.IntN(3) > 0 {
				h.Snap.Volumes[cl][c] = true
			}
		}
	}
	next := 0
	for range steps {
		switch op := r.IntN(10); {
		case op < 5:
			next++
			b := st.NewJob(fmt.Sprintf("j%03d", next), "u1").GPU("A", int64(1+r.IntN(8)))
			switch r.IntN(3) {
			case 0:
				b.Low()
			case 1:
				if r.IntN(3) == 0 {
					b.MPI(2)
				}
			}
			j := b.Obj()
			for range r.IntN(3) {
				v := rw(claims[r.IntN(len(claims))])
				v.ReadOnly = r.IntN(2) == 0
				if !slices.ContainsFunc(j.Volumes, func(x structs.Volume) bool { return x.Claim == v.Claim }) {
					v.Name = fmt.Sprintf("v%d", len(j.Volumes))
					j.Volumes = append(j.Volumes, v)
				}
			}
			_ = h.Submit(j)
		case op < 7:
			var running []string
			for id, j := range h.Snap.Jobs {
				if j.State == structs.JobRunning {
					running = append(running, string(id))
				}
			}
			if len(running) > 0 {
				slices.Sort(running)
				h.Finish(running[r.IntN(len(running))], structs.JobSucceeded)
			}
		case op < 9:
			h.Settle()
		default:
			h.Advance(30)
		}
		checkDeterministic(t, h, r)
		p := h.Cycle()
		for _, pl := range p.Placements {
			j := h.Snap.Jobs[pl.Job]
			cl := h.Node(string(pl.Tasks[0].Node)).Cluster
			for _, v := range j.Volumes {
				assert.True(t, h.Snap.Volumes[cl][v.Claim], "job %s placed in %s, which has no claim %s", j.ID, cl, v.Claim)
			}
		}
		for _, pr := range p.Preemptions {
			require.Equal(t, structs.PriorityLow, h.Snap.Jobs[pr.Victim].Priority, "victim %s", pr.Victim)
			require.Greater(t, h.Snap.Jobs[pr.Preemptor].Priority, structs.PriorityLow, "preemptor %s", pr.Preemptor)
		}
	}
}
