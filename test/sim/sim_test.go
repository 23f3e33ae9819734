package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadTestdata(t *testing.T) {
	nodes, err := loadNodes("testdata")
	require.NoError(t, err)
	assert.Len(t, nodes, 1523)
	assert.EqualValues(t, 6212, totalGPUs(nodes))
	cpuOnly := 0
	for _, n := range nodes {
		if n.GPUs == 0 {
			cpuOnly++
			assert.Empty(t, n.Model, n.Name)
		}
	}
	assert.Equal(t, 310, cpuOnly)

	atomNodes := toNodes(nodes)
	assert.EqualValues(t, 32000, atomNodes[0].Capacity.MilliCPU)
	assert.EqualValues(t, int64(262144)<<20, atomNodes[0].Capacity.Memory)
	assert.Empty(t, atomNodes[0].Tags)
	for i, n := range atomNodes {
		assert.Equal(t, "ready", string(n.State))
		assert.Equal(t, "public", string(n.PoolName()))
		if nodes[i].GPUs > 0 {
			assert.Equal(t, nodes[i].Model, n.Capacity.AccelType)
			assert.Equal(t, map[string]string{"model": nodes[i].Model}, n.Tags)
		}
	}

	for trace, want := range map[string]int{"default": 8152, "multigpu50": 9061, "gpuspec33": 8152} {
		reqs, err := loadRequests("testdata", trace)
		require.NoError(t, err, trace)
		assert.Len(t, reqs, want, trace)
		pinned := 0
		for _, r := range reqs {
			assert.LessOrEqual(t, r.GPUs, int64(8), r.Name)
			if len(r.Models) > 0 {
				pinned++
			}
		}
		if trace == "gpuspec33" {
			assert.Positive(t, pinned)
		} else {
			assert.Zero(t, pinned, trace)
		}
	}
	// openb-pod-0001 asks for 460 milli-GPU: one whole GPU.
	reqs, err := loadRequests("testdata", "default")
	require.NoError(t, err)
	assert.Equal(t, request{Name: "openb-pod-0001", MilliCPU: 6000, Memory: 12288 << 20, GPUs: 1}, reqs[1])
}

func TestParseSpec(t *testing.T) {
	assert.Nil(t, parseSpec(""))
	assert.Equal(t, []string{"T4"}, parseSpec("T4"))
	assert.Equal(t, []string{"V100M16", "V100M32"}, parseSpec("V100M32|V100M16|V100M32"))
	assert.Equal(t, "model in (V100M16,V100M32)", request{Models: parseSpec("V100M16|V100M32")}.selector())
	assert.Empty(t, request{}.selector())
}

func TestArrivalsReach130Percent(t *testing.T) {
	reqs, err := loadRequests("testdata", "multigpu50")
	require.NoError(t, err)
	const total = 100
	arr, err := arrivals(reqs, total, 7)
	require.NoError(t, err)
	var asked int64
	for _, i := range arr[:len(arr)-1] {
		asked += reqs[i].GPUs
	}
	assert.Less(t, asked*10, int64(13*total), "stops at the first arrival reaching 130%")
	asked += reqs[arr[len(arr)-1]].GPUs
	assert.GreaterOrEqual(t, asked*10, int64(13*total))

	again, err := arrivals(reqs, total, 7)
	require.NoError(t, err)
	assert.Equal(t, arr, again)
	other, err := arrivals(reqs, total, 8)
	require.NoError(t, err)
	assert.NotEqual(t, arr, other)
}

// tinyCluster samples n nodes of the node list at an even stride, so it
// holds CPU-only nodes and GPU nodes of several models.
func tinyCluster(t *testing.T, n int) []node {
	all, err := loadNodes("testdata")
	require.NoError(t, err)
	out := make([]node, n)
	for i := range out {
		out[i] = all[i*len(all)/n]
	}
	return out
}

// TestTinyReplay replays a 40-node cluster with one seed under every policy
// twice: the same seed gives the same outcome, and no node is over capacity.
func TestTinyReplay(t *testing.T) {
	nodes := tinyCluster(t, 40)
	atomNodes := toNodes(nodes)
	for _, trace := range []string{"default", "gpuspec33"} {
		reqs, err := loadRequests("testdata", trace)
		require.NoError(t, err)
		arr, err := arrivals(reqs, totalGPUs(nodes), 1)
		require.NoError(t, err)
		for _, p := range policies {
			t.Run(trace+"/"+p, func(t *testing.T) {
				rp := &replay{Trace: trace, Policy: p, Seed: 1, Nodes: nodes, Atom: atomNodes,
					Reqs: reqs, Arrivals: arr, Schedule: coreSchedule}
				first, pl, err := rp.run()
				require.NoError(t, err) // atom: every plan passed the consistency checks
				second, _, err := rp.run()
				require.NoError(t, err)
				assert.Equal(t, first.Rate(), second.Rate(), "same seed, same rate")
				assert.Equal(t, first.Outcome, second.Outcome, "same seed, same placements")
				assert.Len(t, first.Outcome, len(arr))
				var free int64
				for _, f := range pl.freeGPUs() {
					assert.GreaterOrEqual(t, f, int64(0))
					free += f
				}
				assert.Equal(t, first.TotalGPUs, first.AllocGPUs+free, "every GPU is free or allocated")
				if b, ok := pl.(*baseline); ok {
					assert.Positive(t, first.AllocGPUs)
					assertWithinCapacity(t, nodes, b.Placed)
				}
			})
		}
	}
}

// assertWithinCapacity recomputes every node's use from the placements.
func assertWithinCapacity(t *testing.T, nodes []node, placed []placement) {
	t.Helper()
	use := make([]free, len(nodes))
	var gpus int64
	for _, p := range placed {
		u := &use[p.Node]
		u.MilliCPU += p.Req.MilliCPU
		u.Memory += p.Req.Memory
		u.GPUs += p.Req.GPUs
		gpus += p.Req.GPUs
		if len(p.Req.Models) > 0 {
			assert.Contains(t, p.Req.Models, nodes[p.Node].Model, "%s on %s", p.Req.Name, nodes[p.Node].Name)
		}
	}
	assert.Positive(t, gpus)
	for i, n := range nodes {
		assert.LessOrEqual(t, use[i].MilliCPU, n.MilliCPU, n.Name)
		assert.LessOrEqual(t, use[i].Memory, n.MemoryMiB<<20, n.Name)
		assert.LessOrEqual(t, use[i].GPUs, n.GPUs, n.Name)
	}
}

func TestBestFitPrefersFullestNode(t *testing.T) {
	nodes := []node{
		{Name: "a", MilliCPU: 64000, MemoryMiB: 1 << 20, GPUs: 8, Model: "G2"},
		{Name: "b", MilliCPU: 64000, MemoryMiB: 1 << 20, GPUs: 2, Model: "T4"},
		{Name: "c", MilliCPU: 32000, MemoryMiB: 1 << 20, GPUs: 2, Model: "T4"},
		{Name: "cpu", MilliCPU: 8000, MemoryMiB: 1 << 20},
	}
	b, err := newBaseline(policyBestFit, nodes, 1)
	require.NoError(t, err)
	gpu := &request{Name: "g", MilliCPU: 1000, GPUs: 1}
	assert.Equal(t, 2, b.bestFit(gpu), "fewest GPUs left, then least CPU left")
	assert.Equal(t, 0, b.bestFit(&request{Name: "g8", GPUs: 8}))
	assert.Equal(t, 0, b.bestFit(&request{Name: "pinned", GPUs: 1, Models: []string{"G2"}}))
	assert.Equal(t, 3, b.bestFit(&request{Name: "cpu", MilliCPU: 1000}), "least CPU left")
	assert.Equal(t, -1, b.bestFit(&request{Name: "huge", GPUs: 9}))

	ff, err := newBaseline(policyFirstFit, nodes, 1)
	require.NoError(t, err)
	assert.Equal(t, 0, ff.firstFit(gpu))
	assert.Equal(t, 1, ff.firstFit(&request{Name: "pinned", GPUs: 1, Models: []string{"T4"}}))
}

func TestRandomIsUniformOverFeasibleNodes(t *testing.T) {
	nodes := []node{
		{Name: "a", MilliCPU: 1000, MemoryMiB: 1, GPUs: 1, Model: "T4"},
		{Name: "b", MilliCPU: 1000, MemoryMiB: 1, GPUs: 1, Model: "G2"},
		{Name: "c", MilliCPU: 1000, MemoryMiB: 1, GPUs: 1, Model: "T4"},
		{Name: "d", MilliCPU: 1000, MemoryMiB: 1, GPUs: 1, Model: "T4"},
	}
	b, err := newBaseline(policyRandom, nodes, 1)
	require.NoError(t, err)
	counts := make([]int, len(nodes))
	r := &request{Name: "t", GPUs: 1, Models: []string{"T4"}}
	for range 3000 {
		counts[b.random(r)]++
	}
	assert.Zero(t, counts[1], "infeasible node never picked")
	for _, i := range []int{0, 2, 3} {
		assert.InDelta(t, 1000, counts[i], 150, "node %d", i)
	}
}

// TestRunOutput runs the command on the real data with the baselines only
// and checks the output's keys and order.
func TestRunOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-seeds", "1", "-trace", "default", "-policy", "first-fit,best-fit"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	line := regexp.MustCompile(`^trace=default policy=(first-fit|best-fit) gpu_alloc_rate=[01]\.\d{4} placed_tasks=\d+\.\d failed_tasks=\d+\.\d `)
	require.Len(t, lines, 3, out.String())
	for _, l := range lines[:2] {
		assert.Regexp(t, line, l)
	}
	assert.True(t, strings.HasPrefix(lines[2], "seeds=1 "), lines[2])
	assert.True(t, slices.ContainsFunc(strings.Split(errOut.String(), "\n"), func(s string) bool {
		return strings.HasPrefix(s, "trace=default policy=best-fit failed_by_gpus=")
	}), errOut.String())

	assert.Equal(t, 2, run([]string{"-trace", "nope"}, &out, &errOut))
	assert.Equal(t, 2, run([]string{"-data", t.TempDir()}, &out, &errOut))
}
