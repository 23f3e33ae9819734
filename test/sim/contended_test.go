package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
)

func TestJain(t *testing.T) {
	assert.InDelta(t, 1.0, jain([]float64{0.3, 0.3, 0.3, 0.3}), 1e-12, "all equal")
	assert.InDelta(t, 0.25, jain([]float64{1, 0, 0, 0}), 1e-12, "one of four has everything")
	assert.InDelta(t, 0.9, jain([]float64{1, 2}), 1e-12, "(1+2)² / (2·(1+4))")
	assert.InDelta(t, 1.0, jain(nil), 1e-12, "nobody asked")
	assert.InDelta(t, 1.0, jain([]float64{0, 0}), 1e-12, "nobody got anything: equal")
}

func TestWindowJain(t *testing.T) {
	h := time.Hour
	jobs := []*simJob{
		// Tenant 0 asks for 2 GPUs all hour and holds them the first half.
		{arrival: arrival{At: 0, Tenant: 0}, template: &template{request: request{GPUs: 2}}, Done: -1, Held: []span{{0, h / 2}}},
		// Tenant 1 asks for 1 GPU from 15 minutes, ends at 45, holds it 15..45.
		{arrival: arrival{At: h / 4, Tenant: 1}, template: &template{request: request{GPUs: 1}}, Done: 3 * h / 4, Held: []span{{h / 4, 3 * h / 4}}},
		// Tenant 2 arrives after the window: it does not count.
		{arrival: arrival{At: h, Tenant: 2}, template: &template{request: request{GPUs: 8}}, Done: -1},
	}
	// x = 0.5 (tenant 0) and 1 (tenant 1): 1.5² / (2 · 1.25) = 0.9.
	assert.InDelta(t, 0.9, windowJain(jobs, 0, h, 2*h), 1e-12)
	// Second hour: tenant 0 holds nothing (0), tenant 2 nothing (0).
	assert.InDelta(t, 1.0, windowJain(jobs, h, 2*h, 2*h), 1e-12)
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, 5.0, percentile(v, 0.5))
	assert.Equal(t, 10.0, percentile(v, 0.99))
	assert.Equal(t, 1.0, percentile(v[:1], 0.99))
	assert.Zero(t, percentile(nil, 0.5))
}

func TestContendedArrivals(t *testing.T) {
	tmpls, err := loadTemplates("testdata")
	require.NoError(t, err)
	for _, tp := range tmpls {
		require.Positive(t, tp.GPUs, tp.Name)
		require.Positive(t, tp.Run, tp.Name)
	}
	// openb-pod-0001: LS, 460 milli-GPU, scheduled at 427061, deleted at 12902960.
	assert.Equal(t, template{request: request{Name: "openb-pod-0001", MilliCPU: 6000, Memory: 12288 << 20, GPUs: 1},
		Run: (12902960 - 427061) * time.Second, Priority: structs.PriorityNormal}, tmpls[1])
	assert.True(t, slices.ContainsFunc(tmpls, func(tp template) bool { return tp.Priority == structs.PriorityLow }))

	w := contendedWorkload
	const gpus = 2000 // larger than the replay's cluster, for a tight average
	arr, err := contendedArrivals(tmpls, gpus, w, 1)
	require.NoError(t, err)
	again, err := contendedArrivals(tmpls, gpus, w, 1)
	require.NoError(t, err)
	assert.Equal(t, arr, again, "a seed gives the same arrivals")
	other, err := contendedArrivals(tmpls, gpus, w, 2)
	require.NoError(t, err)
	assert.NotEqual(t, arr[:10], other[:10])

	var per [tenants]int
	for i, a := range arr {
		require.Less(t, a.At, w.horizon())
		if i > 0 {
			require.GreaterOrEqual(t, a.At, arr[i-1].At)
		}
		per[a.Tenant]++
	}
	n := float64(len(arr))
	assert.InDelta(t, 0.5, float64(per[0])/n, 0.02, "tenant t1 submits half the jobs")
	for i := 1; i < tenants-1; i++ {
		assert.Greater(t, per[i], per[i+1], "tenant %d submits more than tenant %d", i, i+1)
	}
	assert.InDelta(t, 1.5, demandFactor(arr, tmpls, gpus, w.horizon()), 0.1, "demand is 1.5 × the GPUs")

	q := tenantQuotas(gpus)
	var sum int64
	for _, v := range q {
		sum += v
	}
	assert.InDelta(t, 2*gpus, sum, tenants, "quotas add up to twice the GPUs")
	assert.EqualValues(t, gpus, q[0])
}

func TestSampleGPUNodes(t *testing.T) {
	nodes, err := loadNodes("testdata")
	require.NoError(t, err)
	s := sampleGPUNodes(nodes, contendedWorkload.NodeEvery)
	for _, n := range s {
		require.Positive(t, n.GPUs)
	}
	gpuNodes := len(nodes) - 310
	assert.Len(t, s, (gpuNodes+contendedWorkload.NodeEvery-1)/contendedWorkload.NodeEvery)
}

// replaySmall replays arrivals of tmpls on nodes under policy, with
// quotas for nodes' GPUs and w's horizon, and returns the replay.
func replaySmall(t *testing.T, policy string, nodes []node, tmpls []template, arr []arrival, w workload) *contendedRun {
	t.Helper()
	r := &contendedRun{Policy: policy, W: w, Jobs: newJobs(arr, tmpls)}
	var err error
	r.Engine, err = newEngine(policy, w, nodes, toNodes(nodes), r.Jobs, tenantQuotas(totalGPUs(nodes)), coreSchedule)
	require.NoError(t, err)
	cycles, err := r.run()
	require.NoError(t, err)
	assert.Equal(t, int(w.horizon()/w.Tick), cycles)
	if e, ok := r.Engine.(*stateEngine); ok {
		require.NoError(t, e.st.CheckInvariants())
	}
	return r
}

// smallWorkload is 4 hours, a cycle every 30 s, the whole time measured,
// a minimum runtime of 10 minutes under atom.
var smallWorkload = workload{Hours: 4, Warmup: 0, Tick: 30 * time.Second, StopGrace: 30 * time.Second, MinRuntime: 10 * time.Minute}

// oneNode is a node of 2 GPUs, 8 cores and 32 GiB each.
var oneNode = []node{{Name: "n1", MilliCPU: 16000, MemoryMiB: 65536, GPUs: 2, Model: "G"}}

// smallReplay is a two-GPU node, a low job of tenant t2 running two
// hours, a normal job of tenant t1 arriving 5 minutes in, and a second
// normal one that t1's quota (2 GPUs) refuses until the first has ended.
func smallReplay(t *testing.T, policy string) figures {
	t.Helper()
	tmpls := []template{
		{request: request{Name: "low", MilliCPU: 8000, Memory: 16 << 30, GPUs: 2}, Run: 2 * time.Hour, Priority: structs.PriorityLow},
		{request: request{Name: "normal", MilliCPU: 4000, Memory: 8 << 30, GPUs: 1}, Run: time.Hour, Priority: structs.PriorityNormal},
		{request: request{Name: "big", MilliCPU: 8000, Memory: 16 << 30, GPUs: 2}, Run: 30 * time.Minute, Priority: structs.PriorityNormal},
	}
	arr := []arrival{{At: 0, Tenant: 1, Tmpl: 0}, {At: 300 * time.Second, Tenant: 0, Tmpl: 1}, {At: 700 * time.Second, Tenant: 0, Tmpl: 2}}
	require.EqualValues(t, 2, tenantQuotas(2)[0])
	r := replaySmall(t, policy, oneNode, tmpls, arr, smallWorkload)
	return measure(r.Jobs, smallWorkload, 2)
}

// TestFairShareOrdersTenants: t1's two low jobs of two GPUs arrive
// before t2's. Oldest first, t1's second job goes next; by fair share,
// t2's (t1 has used the node for an hour, t2 nothing).
func TestFairShareOrdersTenants(t *testing.T) {
	tmpls := []template{{request: request{Name: "low", MilliCPU: 8000, Memory: 16 << 30, GPUs: 2}, Run: time.Hour, Priority: structs.PriorityLow}}
	arr := []arrival{{At: 0, Tenant: 0}, {At: time.Minute, Tenant: 0}, {At: 2 * time.Minute, Tenant: 1}}
	first := func(policy string) []time.Duration {
		r := replaySmall(t, policy, oneNode, tmpls, arr, smallWorkload)
		return []time.Duration{r.Jobs[0].First, r.Jobs[1].First, r.Jobs[2].First}
	}
	assert.Equal(t, []time.Duration{0, time.Hour, 2 * time.Hour}, first(policyAtomFIFO))
	assert.Equal(t, []time.Duration{0, 2 * time.Hour, time.Hour}, first(policyAtom))
	assert.Equal(t, []time.Duration{0, time.Hour, 2 * time.Hour}, first(policyFirstFit))
}

func TestSmallReplayAtom(t *testing.T) {
	// 0: low placed. 300: normal arrives; low has run less than the
	// minimum runtime and is the only choice: normal waits. 600: low
	// preempted (stops at 630). 630: normal placed; 720: big refused by
	// quota. 4230: normal ends, big accepted and placed (normal before
	// low). 6030: big ends, low placed again, runs to 13230.
	f := smallReplay(t, policyAtom)
	assert.InDelta(t, (2*630+2*7200+3600+2*1800)/28800.0, f.GPUUtil, 1e-12)
	assert.InDelta(t, 630-300, f.WaitP50, 1e-9)
	assert.InDelta(t, 4230-700, f.WaitP99, 1e-9)
	assert.InDelta(t, 2*630/3600.0, f.PreemptedGPUHours, 1e-12)
	assert.Equal(t, 1, f.Preemptions)
	assert.Equal(t, 3, f.Arrived)
	assert.Zero(t, f.NeverPlaced)
	// Hourly Jain of x (t1, t2) over the spans above (hours 2 and 3:
	// only t2 asks).
	assert.InDelta(t, (0.916460616373335+0.8580953241086469+1+1)/4, f.Jain, 1e-12)
}

func TestSmallReplayAtomFIFO(t *testing.T) {
	// No minimum runtime: 300: low preempted (stops at 330). 330: normal
	// placed; 3930: normal ends, big placed; 5730: low placed again, runs
	// to 12930.
	f := smallReplay(t, policyAtomFIFO)
	assert.InDelta(t, (2*330+2*7200+3600+2*1800)/28800.0, f.GPUUtil, 1e-12)
	assert.InDelta(t, 330-300, f.WaitP50, 1e-9)
	assert.InDelta(t, 3930-700, f.WaitP99, 1e-9)
	assert.InDelta(t, 2*330/3600.0, f.PreemptedGPUHours, 1e-12)
	assert.InDelta(t, (0.7395108177385582+0.8885385581961464+1+1)/4, f.Jain, 1e-12)
}

func TestSmallReplayFirstFit(t *testing.T) {
	// 0: low placed, runs to 7200. 7200: normal placed; big still over
	// quota. 10800: normal ends, big accepted and placed.
	f := smallReplay(t, policyFirstFit)
	assert.InDelta(t, (2*7200+3600+2*1800)/28800.0, f.GPUUtil, 1e-12)
	assert.InDelta(t, 7200-300, f.WaitP50, 1e-9)
	assert.InDelta(t, 10800-700, f.WaitP99, 1e-9)
	assert.Zero(t, f.PreemptedGPUHours)
	assert.InDelta(t, (0.5+0.5+1+1)/4, f.Jain, 1e-12)
}

// TestTinyContendedReplay replays a few nodes of the list for two hours
// under every policy twice: the same seed gives the same figures, and
// atom's state passes the core's invariant checker at the end.
func TestTinyContendedReplay(t *testing.T) {
	all, err := loadNodes("testdata")
	require.NoError(t, err)
	nodes := sampleGPUNodes(all, 150)
	gpus := totalGPUs(nodes)
	ran, err := loadTemplates("testdata")
	require.NoError(t, err)
	tmpls := fitting(ran, toNodes(nodes))
	require.NotEmpty(t, tmpls)
	w := contendedWorkload
	w.Hours = 2
	arr, err := contendedArrivals(tmpls, gpus, w, 1)
	require.NoError(t, err)
	require.NotEmpty(t, arr)
	for _, p := range contendedPolicies {
		t.Run(p, func(t *testing.T) {
			var figs []figures
			for range 2 {
				r := &contendedRun{Policy: p, W: w, Jobs: newJobs(arr, tmpls)}
				r.Engine, err = newEngine(p, w, nodes, toNodes(nodes), r.Jobs, tenantQuotas(gpus), coreSchedule)
				require.NoError(t, err)
				_, err = r.run()
				require.NoError(t, err)
				if atom, ok := r.Engine.(*stateEngine); ok {
					require.NoError(t, atom.st.CheckInvariants())
				}
				f := measure(r.Jobs, w, gpus)
				assert.Positive(t, f.GPUUtil)
				assert.LessOrEqual(t, f.GPUUtil, 1.0)
				assert.Positive(t, f.Arrived)
				figs = append(figs, f)
			}
			assert.Equal(t, figs[0], figs[1])
		})
	}
}

func TestContendedTargets(t *testing.T) {
	met := func() map[string]contendedSummary {
		s := func(util, jain, hours float64) contendedSummary {
			return contendedSummary{figures: figures{GPUUtil: util, Jain: jain, PreemptedGPUHours: hours}}
		}
		return map[string]contendedSummary{
			policyAtom: s(0.94, 0.95, 10), policyAtomFIFO: s(0.945, 0.93, 20),
			policyFirstFit: s(0.949, 0.92, 0), policyBestFit: s(0.95, 0.91, 0),
		}
	}
	assert.Empty(t, contendedTargets(met()))

	m := met()
	a := m[policyAtom]
	a.Jain, a.GPUUtil, a.PreemptedGPUHours = 0.85, 0.93, 20
	m[policyAtom] = a
	assert.Equal(t, []string{
		"atom jain 0.8500 < 0.9",
		"atom jain 0.8500 not above atom-fifo's 0.9300",
		"atom jain 0.8500 not above best-fit's 0.9100",
		"atom jain 0.8500 not above first-fit's 0.9200",
		"atom gpu_util 0.9300 more than 1 point below best-fit's 0.9500",
		"atom preempted_gpu_hours 20.0 not below atom-fifo's 20.0",
	}, contendedTargets(m))

	delete(m, policyAtom)
	assert.Empty(t, contendedTargets(m), "no atom, nothing to check")
}

func TestRunOutputContended(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-seeds", "1", "-trace", "contended", "-policy", "first-fit,best-fit,random"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	line := regexp.MustCompile(`^trace=contended policy=(first-fit|best-fit) gpu_util=[01]\.\d{4} jain=[01]\.\d{4} normal_wait_p50_s=\d+ normal_wait_p99_s=\d+ preempted_gpu_hours=0\.0$`)
	require.Len(t, lines, 3, out.String())
	assert.Regexp(t, line, lines[0])
	assert.Contains(t, lines[0], "policy=first-fit")
	assert.Regexp(t, line, lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "seeds=1 "), lines[2])
	assert.Contains(t, errOut.String(), "trace=contended nodes=76 gpus=414 ")
}

func TestMaxMin(t *testing.T) {
	d := [tenants]float64{10, 1, 2, 0, 0, 0, 0, 30}
	// 12 to share among 4: 3 each; t2 and t3 need less (1, 2), the
	// remaining 9 go 4.5 each to t1 and t8.
	eq := [tenants]float64{1, 1, 1, 1, 1, 1, 1, 1}
	assert.Equal(t, [tenants]float64{4.5, 1, 2, 0, 0, 0, 0, 4.5}, maxMin(d, eq, 12))
	assert.Equal(t, d, maxMin(d, eq, 100), "enough for all")
	assert.Equal(t, [tenants]float64{}, maxMin(d, eq, 0))
	// t1 weighs 2: 12 / 5 weight units = 2.4 a unit; t2 and t3 need
	// less (1, 2), the remaining 9 go 2:1 to t1 and t8.
	w := [tenants]float64{2, 1, 1, 1, 1, 1, 1, 1}
	assert.Equal(t, [tenants]float64{6, 1, 2, 0, 0, 0, 0, 3}, maxMin(d, w, 12))
}

func TestWeightsFollowQuotas(t *testing.T) {
	q, w := tenantQuotas(414), contendedWorkload.weights()
	for i := 1; i < tenants; i++ {
		assert.InEpsilon(t, float64(q[0])/float64(q[i]), w[0]/w[i], 0.02, "tenant %d", i+1)
	}
	eq := contendedWorkload
	eq.EqualWeights = true
	assert.Equal(t, [tenants]float64{1, 1, 1, 1, 1, 1, 1, 1}, eq.weights())
}

func TestShareJain(t *testing.T) {
	h, eq := time.Hour, [tenants]float64{1, 1, 1, 1, 1, 1, 1, 1}
	gpu := &template{request: request{GPUs: 1}}
	jobs := []*simJob{
		// t1 asks for 2 GPU-hours and gets 1.5, t2 asks for 1 and gets
		// 0.5: max-min of the 2 received is 1 each, so x = 1.5, 0.5.
		{arrival: arrival{Tenant: 0}, template: gpu, Done: -1, Held: []span{{0, h}}},
		{arrival: arrival{Tenant: 0}, template: gpu, Done: -1, Held: []span{{0, h / 2}}},
		{arrival: arrival{Tenant: 1}, template: gpu, Done: -1, Held: []span{{h / 2, h}}},
	}
	assert.InDelta(t, 4.0/(2*2.5), shareJain(jobs, eq, 0, h, h), 1e-12)
	// Received over asked: 0.75 and 0.5.
	assert.InDelta(t, 1.25*1.25/(2*(0.5625+0.25)), windowJain(jobs, 0, h, h), 1e-12)
	// A tenant that asked for less than an equal part is its own fair share.
	jobs[2].Done = h / 2
	jobs[2].Held = []span{{0, h / 2}}
	assert.InDelta(t, 1.0, shareJain(jobs, eq, 0, h, h), 1e-12, "t2 asked for 0.5 and got it, t1 got the rest")
}
