package sched_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// randomRacks is a harness over 4-14 GPU nodes of type A (2, 4 or 8
// GPUs) in up to 4 racks of up to 2 blocks; some nodes have no rack.
func randomRacks(t *testing.T, r *rand.Rand) *st.Harness {
	var nodes []*structs.Node
	for i := range 4 + r.IntN(11) {
		n := st.GPUNode(fmt.Sprintf("n%02d", i), "A", []int64{2, 4, 8}[r.IntN(3)])
		if r.IntN(8) > 0 {
			rack := r.IntN(4)
			st.Label(n, "rack", fmt.Sprintf("r%d", rack), "block", fmt.Sprintf("b%d", rack/2))
		}
		nodes = append(nodes, n)
	}
	h := st.New(t, nodes...)
	h.Topology("block", "rack")
	for u := range 3 {
		h.Quota(structs.UserScope(structs.UserID(fmt.Sprintf("u%d", u))), structs.ResourceList{"gpu/A": 1000})
	}
	return h
}

// TestTopologyRandomStreams drives random racked clusters with random
// gangs (required, preferred or no topology; normal or low; mpi or
// spark) that arrive, end and are preempted; after every step the
// harness checks the invariants, among them that no job requiring a
// level ever has tasks in two of its domains.
func TestTopologyRandomStreams(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 6
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 15))
			h := randomRacks(t, r)
			next := 0
			for range 60 {
				switch op := r.IntN(10); {
				case op < 5:
					next++
					b := st.NewJob(fmt.Sprintf("j%03d", next), fmt.Sprintf("u%d", r.IntN(3)))
					if r.IntN(3) == 0 {
						b.Low()
					}
					b.MPI(1+r.IntN(5)).GPU("A", []int64{1, 2, 4, 8}[r.IntN(4)])
					switch r.IntN(3) {
					case 0:
						b.Required([]string{"rack", "block"}[r.IntN(2)])
					case 1:
						b.Preferred([]string{"rack", "block"}[r.IntN(2)])
					}
					j := b.Obj()
					if r.IntN(4) == 0 {
						j.Kind, j.Replicas, j.Resources = structs.KindSpark, 1, structs.Resources{MilliCPU: 1000, Memory: st.Gi, Accels: 1, AccelType: "A"}
						n := 1 + r.IntN(3)
						j.Spark = &structs.Spark{MainApplicationFile: "local:///a.py",
							Executor:          structs.SparkExecutor{Cores: 2, Memory: 4 * st.Gi, GPU: &structs.SparkGPU{Type: "A", Amount: 1, Vendor: "nvidia.com", DiscoveryScript: "/x"}},
							DynamicAllocation: &structs.SparkDynamicAllocation{MinExecutors: n, InitialExecutors: n, MaxExecutors: n + 2}}
					}
					_ = h.Submit(j)
				case op < 7:
					if running := h.Running(); len(running) > 0 {
						id := running[r.IntN(len(running))]
						if h.Job(id).Spark != nil && r.IntN(2) == 0 && liveDriver(h, id) {
							_, _ = h.BindExecutor(id, fmt.Sprintf("%s-e%d", id, r.IntN(1000)))
							break
						}
						h.Finish(id, structs.JobSucceeded)
					}
				case op < 8:
					h.Settle()
				default:
					h.Advance(time.Duration(r.IntN(120)) * time.Second)
				}
				checkDeterministic(t, h, r)
				h.Cycle()
			}
		})
	}
}

// TestTopologyAgainstReference places one required gang on random racked
// clusters, partly used, and compares with a brute-force reference: it
// is placed exactly when some domain of its level holds it (counting
// free accelerators node by node), all in one domain, and in one that
// holds the fewest of its replicas among those that do.
func TestTopologyAgainstReference(t *testing.T) {
	placedN := 0 // seeds where some domain holds it: most of them
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 16))
		h := randomRacks(t, r)
		for i := range r.IntN(12) {
			_ = h.Submit(st.NewJob(fmt.Sprintf("f%02d", i), "u1").GPU("A", []int64{1, 2, 4}[r.IntN(3)]).Obj())
			h.Cycle()
		}
		level := []string{"rack", "block"}[r.IntN(2)]
		need := []int64{1, 2, 4, 8}[r.IntN(4)]
		n := 1 + r.IntN(4)
		j := st.NewJob("j", "u2").MPI(n).GPU("A", need).Required(level).Obj()
		if err := h.Submit(j); err != nil {
			require.ErrorIs(t, err, sched.ErrUnsatisfiable, "seed %d", seed)
			continue
		}
		// The reference: slots per domain, from each node's free GPUs.
		slots := map[string]int{}
		used := map[structs.NodeID]int64{}
		for _, tk := range h.Snap.Tasks {
			used[tk.Node] += tk.Resources.Accels
		}
		for _, nd := range h.Snap.Nodes {
			d := domainPath(nd, level)
			if d == "" {
				continue
			}
			slots[d] += int((nd.Capacity.Accels - used[nd.Name]) / need)
		}
		best := -1
		for _, s := range slots {
			if s >= n && (best < 0 || s < best) {
				best = s
			}
		}
		p := h.Cycle()
		var placed []string
		for _, pl := range p.Placements {
			if pl.Job == "j" {
				for _, tp := range pl.Tasks {
					placed = append(placed, domainPath(h.Node(string(tp.Node)), level))
				}
			}
		}
		if best < 0 {
			assert.Empty(t, placed, "seed %d: no %s holds %d × %d GPUs", seed, level, n, need)
			continue
		}
		placedN++
		require.Len(t, placed, n, "seed %d: a %s holds %d × %d GPUs: %v", seed, level, n, need, slots)
		assert.Len(t, slices.Compact(slices.Clone(placed)), 1, "seed %d: one %s", seed, level)
		assert.Equal(t, best, slots[placed[0]], "seed %d: the %s that fits most tightly (%v)", seed, level, slots)
	}
	assert.Greater(t, placedN, 150)
}

// domainPath is node n's domain of level (rack or block): "" when it has
// none.
func domainPath(n *structs.Node, level string) string {
	switch {
	case n.Tags[level] == "":
		return ""
	case level == "rack":
		return n.Tags["block"] + "/" + n.Tags["rack"]
	}
	return n.Tags["block"]
}

// liveDriver reports whether spark job id's driver runs (not stopping).
func liveDriver(h *st.Harness, id string) bool {
	j := h.Job(id)
	for _, tk := range h.Tasks(id) {
		if tk.Attempt == j.Attempt && tk.Executor == "" && tk.State == structs.TaskRunning {
			return true
		}
	}
	return false
}
