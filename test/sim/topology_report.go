package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/atom-sched/atom/pkg/sched/schedtest"
)

// replayTopologyAll runs the topology replay for every seed and policy
// asked for, c.Workers at a time, and returns the results by policy in
// seed order.
func replayTopologyAll(c *config, schedule scheduleFunc) (map[string][]*topoResult, error) {
	rows, err := loadNodes(c.DataDir)
	if err != nil {
		return nil, err
	}
	nodes := toNodes(rows)
	schedtest.Racks(nodes, 8, 4)
	ran, err := loadTemplates(c.DataDir)
	if err != nil {
		return nil, err
	}
	tmpls := fitting(ran, nodes)
	gpus := totalGPUs(rows)
	type run struct {
		policy string
		seed   uint64
		jobs   []topoJob
	}
	var runs []run
	for s := 1; s <= c.Seeds; s++ {
		jobs := topoArrivals(tmpls, nodes, gpus, uint64(s))
		for _, p := range c.policiesFor(traceTopology) {
			runs = append(runs, run{p, uint64(s), jobs})
		}
	}
	out := make([]*topoResult, len(runs))
	errs := make([]error, len(runs))
	parallel(len(runs), c.Workers, func(i int) {
		r := runs[i]
		var p topoPlacer
		switch r.policy {
		case policyAtomTopology, policyAtom:
			p = newAtomTopo(nodes, tmpls, schedule, r.policy == policyAtomTopology)
		default:
			b, err := newBaseline(r.policy, rows, r.seed)
			if err != nil {
				errs[i] = err
				return
			}
			p = &bestFitTopo{b: b, tmpls: tmpls, placed: map[int][]placement{}}
		}
		jobs := append([]topoJob(nil), r.jobs...)
		out[i], errs[i] = replayTopology(p, r.policy, r.seed, jobs, tmpls, nodes)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	by := map[string][]*topoResult{}
	for _, r := range out {
		by[r.Policy] = append(by[r.Policy], r)
	}
	return by, nil
}

// topoSummary is a policy's topology results over seeds.
type topoSummary struct {
	OneRack, Racks, Rate float64
	Placed, Room         int
	Calls                int
	CallTime             time.Duration
}

func summarizeTopology(rs []*topoResult) topoSummary {
	var s topoSummary
	var one, racks int
	for _, r := range rs {
		s.Placed += r.Placed
		s.Room += r.Room
		one += r.OneRack
		racks += r.Racks
		s.Rate += r.Rate / float64(len(rs))
		s.Calls += r.Calls
		s.CallTime += r.CallTime
	}
	if s.Room > 0 {
		s.OneRack = float64(one) / float64(s.Room)
	}
	if s.Placed > 0 {
		s.Racks = float64(racks) / float64(s.Placed)
	}
	return s
}

// runTopology replays the topology trace, prints its lines and returns
// the exit code: 1 when a target is missed, 2 on errors.
func runTopology(c *config, schedule scheduleFunc, stdout, stderr io.Writer) int {
	by, err := replayTopologyAll(c, schedule)
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 2
	}
	sums := map[string]topoSummary{}
	for _, p := range c.policiesFor(traceTopology) {
		s := summarizeTopology(by[p])
		sums[p] = s
		fmt.Fprintf(stdout, "trace=%s policy=%s gangs_one_rack=%.4f gpu_alloc_rate=%.4f mean_racks_per_gang=%.2f gangs_placed=%d gangs_with_rack_room=%d\n",
			traceTopology, p, s.OneRack, s.Rate, s.Racks, s.Placed, s.Room)
		if s.Calls > 0 {
			fmt.Fprintf(stderr, "trace=%s policy=%s schedule_calls=%d us_per_call=%.0f\n", traceTopology, p, s.Calls,
				float64(s.CallTime.Microseconds())/float64(s.Calls))
		}
	}
	t, ok := sums[policyAtomTopology]
	if !ok {
		return 0
	}
	var missed []string
	if t.OneRack < 0.95 {
		missed = append(missed, fmt.Sprintf("atom-topology gangs_one_rack %.4f < 0.95", t.OneRack))
	}
	for p, s := range sums {
		if p != policyAtomTopology && s.OneRack >= t.OneRack {
			missed = append(missed, fmt.Sprintf("%s gangs_one_rack %.4f ≥ atom-topology's %.4f", p, s.OneRack, t.OneRack))
		}
	}
	if a, ok := sums[policyAtom]; ok && a.Rate-t.Rate > 0.01 {
		missed = append(missed, fmt.Sprintf("atom-topology gpu_alloc_rate %.4f more than 0.01 below atom's %.4f", t.Rate, a.Rate))
	}
	fmt.Fprintf(stdout, "trace=%s targets_met=%t\n", traceTopology, len(missed) == 0)
	for _, m := range missed {
		fmt.Fprintf(stderr, "sim: trace=%s target missed: %s\n", traceTopology, m)
	}
	if len(missed) > 0 {
		return 1
	}
	return 0
}
