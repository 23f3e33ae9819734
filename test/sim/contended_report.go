package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// contendedResult is one contended replay: one policy, one seed.
type contendedResult struct {
	Policy string
	Seed   uint64
	figures
	Jobs     int
	Cycles   int
	Calls    int           // atom: Schedule calls
	CallTime time.Duration // atom: time inside them
	Duration time.Duration
}

// contendedResults are the contended replays by policy, in seed order,
// and the cluster and job sizes they replayed.
type contendedResults struct {
	ByPolicy               map[string][]*contendedResult
	Nodes, GPUs, Ran, Kept int // Ran: GPU tasks that ran; Kept: those atom could place
}

// replayContended runs the contended replay for every seed and policy
// asked for, c.Workers at a time.
func replayContended(c *config, schedule scheduleFunc) (*contendedResults, error) {
	w := contendedWorkload
	w.MinRuntime = c.MinRuntime
	w.EqualWeights = c.EqualWeights
	all, err := loadNodes(c.DataDir)
	if err != nil {
		return nil, err
	}
	nodes := sampleGPUNodes(all, w.NodeEvery)
	atomNodes := toNodes(nodes)
	gpus := totalGPUs(nodes)
	ran, err := loadTemplates(c.DataDir)
	if err != nil {
		return nil, err
	}
	tmpls := fitting(ran, atomNodes)
	quota := tenantQuotas(gpus)
	res := &contendedResults{ByPolicy: map[string][]*contendedResult{},
		Nodes: len(nodes), GPUs: int(gpus), Ran: len(ran), Kept: len(tmpls)}

	type run struct {
		policy string
		seed   uint64
		arr    []arrival
	}
	var runs []run
	for s := 1; s <= c.Seeds; s++ {
		arr, err := contendedArrivals(tmpls, gpus, w, uint64(s))
		if err != nil {
			return nil, err
		}
		for _, p := range c.policiesFor(traceContended) {
			runs = append(runs, run{p, uint64(s), arr})
		}
	}
	out := make([]*contendedResult, len(runs))
	errs := make([]error, len(runs))
	parallel(len(runs), c.Workers, func(i int) {
		r := runs[i]
		start := time.Now()
		cr := &contendedRun{Policy: r.policy, Seed: r.seed, W: w, Jobs: newJobs(r.arr, tmpls)}
		rr := &contendedResult{Policy: r.policy, Seed: r.seed, Jobs: len(r.arr)}
		if cr.Engine, errs[i] = newEngine(r.policy, w, nodes, atomNodes, cr.Jobs, quota, schedule); errs[i] != nil {
			return
		}
		if rr.Cycles, errs[i] = cr.run(); errs[i] != nil {
			errs[i] = fmt.Errorf("trace=%s policy=%s seed=%d: %w", traceContended, r.policy, r.seed, errs[i])
			return
		}
		rr.figures = measure(cr.Jobs, w, gpus)
		if atom, ok := cr.Engine.(*stateEngine); ok {
			rr.Calls, rr.CallTime = atom.Calls, atom.CallTime
		}
		rr.Duration = time.Since(start)
		out[i] = rr
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, r := range out {
		res.ByPolicy[r.Policy] = append(res.ByPolicy[r.Policy], r)
	}
	return res, nil
}

// mean averages f over rs.
func mean(rs []*contendedResult, f func(*contendedResult) float64) float64 {
	var s float64
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

// contendedSummary is a policy's figures averaged over seeds.
type contendedSummary struct {
	figures
	Jobs, Arrived, NeverPlaced, Preemptions float64
	Cycles, Calls                           int
	CallTime, Duration                      time.Duration
}

func summarizeContended(rs []*contendedResult) contendedSummary {
	var s contendedSummary
	s.GPUUtil = mean(rs, func(r *contendedResult) float64 { return r.GPUUtil })
	s.Jain = mean(rs, func(r *contendedResult) float64 { return r.Jain })
	s.ShareJain = mean(rs, func(r *contendedResult) float64 { return r.ShareJain })
	for t := range tenants {
		s.Received[t] = mean(rs, func(r *contendedResult) float64 { return r.Received[t] })
	}
	s.WaitP50 = mean(rs, func(r *contendedResult) float64 { return r.WaitP50 })
	s.WaitP99 = mean(rs, func(r *contendedResult) float64 { return r.WaitP99 })
	s.PreemptedGPUHours = mean(rs, func(r *contendedResult) float64 { return r.PreemptedGPUHours })
	s.Jobs = mean(rs, func(r *contendedResult) float64 { return float64(r.Jobs) })
	s.Arrived = mean(rs, func(r *contendedResult) float64 { return float64(r.Arrived) })
	s.NeverPlaced = mean(rs, func(r *contendedResult) float64 { return float64(r.NeverPlaced) })
	s.Preemptions = mean(rs, func(r *contendedResult) float64 { return float64(r.figures.Preemptions) })
	for _, r := range rs {
		s.Cycles += r.Cycles
		s.Calls += r.Calls
		s.CallTime += r.CallTime
		s.Duration += r.Duration
	}
	return s
}

// reportContended prints one line per policy and returns 1 if a target
// is missed (contendedTargets), else 0.
func reportContended(c *config, results *contendedResults, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "trace=%s nodes=%d gpus=%d gpu_tasks_ran=%d gpu_tasks_kept=%d\n",
		traceContended, results.Nodes, results.GPUs, results.Ran, results.Kept)
	sums := map[string]contendedSummary{}
	for _, p := range c.policiesFor(traceContended) {
		s := summarizeContended(results.ByPolicy[p])
		sums[p] = s
		fmt.Fprintf(stdout, "trace=%s policy=%s gpu_util=%.4f jain=%.4f normal_wait_p50_s=%.0f normal_wait_p99_s=%.0f preempted_gpu_hours=%.1f\n",
			traceContended, p, s.GPUUtil, s.Jain, s.WaitP50, s.WaitP99, s.PreemptedGPUHours)
		var recv []string
		for t, x := range s.Received {
			recv = append(recv, fmt.Sprintf("%s:%.2f", tenantName(t), x))
		}
		fmt.Fprintf(stderr, "trace=%s policy=%s jain_vs_fair_share=%.4f received_per_asked=%s jobs=%.0f measured_jobs=%.0f never_placed=%.1f preemptions=%.1f cycles=%d seconds=%.1f",
			traceContended, p, s.ShareJain, strings.Join(recv, ","), s.Jobs, s.Arrived, s.NeverPlaced, s.Preemptions, s.Cycles, s.Duration.Seconds())
		if s.Calls > 0 {
			fmt.Fprintf(stderr, " schedule_calls=%d schedule_seconds=%.1f", s.Calls, s.CallTime.Seconds())
		}
		fmt.Fprintln(stderr)
	}
	missed := contendedTargets(sums)
	for _, m := range missed {
		fmt.Fprintf(stderr, "sim: trace=%s target missed: %s\n", traceContended, m)
	}
	if len(missed) > 0 {
		return 1
	}
	return 0
}

// contendedTargets lists the targets the summaries miss:
// atom's jain at least 0.9 and above every other policy's; its gpu_util
// within one point of the best; fewer GPU-hours preempted than atom-fifo.
// A target whose policies were not replayed is not checked.
func contendedTargets(sums map[string]contendedSummary) []string {
	a, ok := sums[policyAtom]
	if !ok {
		return nil
	}
	var missed []string
	if a.Jain < 0.9 {
		missed = append(missed, fmt.Sprintf("atom jain %.4f < 0.9", a.Jain))
	}
	best := policyAtom
	for _, p := range slices.Sorted(maps.Keys(sums)) {
		s := sums[p]
		if p == policyAtom {
			continue
		}
		if s.Jain >= a.Jain {
			missed = append(missed, fmt.Sprintf("atom jain %.4f not above %s's %.4f", a.Jain, p, s.Jain))
		}
		if s.GPUUtil > sums[best].GPUUtil {
			best = p
		}
	}
	if b := sums[best]; b.GPUUtil-a.GPUUtil > 0.01+1e-9 {
		missed = append(missed, fmt.Sprintf("atom gpu_util %.4f more than 1 point below %s's %.4f", a.GPUUtil, best, b.GPUUtil))
	}
	if f, ok := sums[policyAtomFIFO]; ok && a.PreemptedGPUHours >= f.PreemptedGPUHours {
		missed = append(missed, fmt.Sprintf("atom preempted_gpu_hours %.1f not below atom-fifo's %.1f", a.PreemptedGPUHours, f.PreemptedGPUHours))
	}
	return missed
}
