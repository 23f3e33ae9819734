package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	Seeds    int
	Traces   []string
	Policies []string
	DataDir  string
	Workers  int
	Why      bool
	// MinRuntime is the public pool's minimum runtime under atom in the
	// contended replay.
	MinRuntime time.Duration
	// EqualWeights gives every tenant fair-share weight 1 in the contended
	// replay instead of weights set with the quotas.
	EqualWeights bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./test/sim [flags]\n\n"+
			"Replays the Alibaba cluster-trace-gpu-v2023 through atom's scheduling core and\n"+
			"baselines, side by side: packing replays of the pod lists (GPU allocation\n"+
			"rate), a contended replay with departures, tenants and priorities (utilisation,\n"+
			"fairness, waits, work lost to preemption) and a topology replay. Exits 1 if a\n"+
			"target is missed (test/sim/doc.go has them), 2 on errors.\n\n")
		fs.PrintDefaults()
	}
	c := &config{}
	var trace, policy string
	fs.IntVar(&c.Seeds, "seeds", 10, "number of seeds (1..N) to average over")
	fs.StringVar(&trace, "trace", "", "trace to replay: "+strings.Join(allTraces(), ", ")+" (default all)")
	fs.StringVar(&policy, "policy", "", "comma-separated policies: "+strings.Join(allPolicies(), ", ")+" (default all; each trace replays those it knows)")
	fs.StringVar(&c.DataDir, "data", "", "directory holding the trace CSVs (default test/sim/testdata)")
	fs.IntVar(&c.Workers, "workers", runtime.GOMAXPROCS(0), "replays run in parallel")
	fs.BoolVar(&c.Why, "why", false, "print on stderr why atom's core left tasks unplaced")
	fs.DurationVar(&c.MinRuntime, "min-runtime", contendedWorkload.MinRuntime, "contended replay: the public pool's minimum runtime under atom (0: none)")
	fs.BoolVar(&c.EqualWeights, "equal-weights", false, "contended replay: every tenant fair-share weight 1 (default: weights in proportion to the quotas)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.MinRuntime < 0 {
		return nil, fmt.Errorf("-min-runtime %s: use 0 or more", c.MinRuntime)
	}
	if c.Seeds < 1 {
		return nil, fmt.Errorf("-seeds %d: need at least 1", c.Seeds)
	}
	c.Workers = max(c.Workers, 1)
	c.Traces = allTraces()
	if trace != "" {
		if !slices.Contains(c.Traces, trace) {
			return nil, fmt.Errorf("-trace %q: use one of %s", trace, strings.Join(c.Traces, ", "))
		}
		c.Traces = []string{trace}
	}
	c.Policies = allPolicies()
	if policy != "" {
		c.Policies = nil
		for p := range strings.SplitSeq(policy, ",") {
			if !slices.Contains(allPolicies(), p) {
				return nil, fmt.Errorf("-policy %q: use %s", p, strings.Join(allPolicies(), ", "))
			}
			c.Policies = append(c.Policies, p)
		}
	}
	if c.DataDir == "" {
		c.DataDir = defaultDataDir()
	}
	return c, nil
}

// allTraces lists every trace: the packing pod lists, then the contended
// replay.
func allTraces() []string { return append(slices.Clone(traces), traceContended, traceTopology) }

// allPolicies lists every policy of any trace.
func allPolicies() []string {
	out := slices.Clone(policies)
	for _, p := range append(slices.Clone(contendedPolicies), topologyPolicies...) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// policiesFor returns the policies asked for that trace knows, in its
// output order.
func (c *config) policiesFor(trace string) []string {
	known := policies
	if trace == traceContended {
		known = contendedPolicies
	}
	if trace == traceTopology {
		known = topologyPolicies
	}
	var out []string
	for _, p := range known {
		if slices.Contains(c.Policies, p) {
			out = append(out, p)
		}
	}
	return out
}

// run is main without the exit: 0 when every target of the traces
// replayed is met (atom beats best-fit on each packing trace; the
// contended targets, contended.go), 1 when one is not, 2 on errors.
func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 2
	}
	start := time.Now()
	results, err := replayAll(c, coreSchedule)
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 2
	}
	code := report(c, results, stdout, stderr)
	if slices.Contains(c.Traces, traceContended) {
		cres, err := replayContended(c, coreSchedule)
		if err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 2
		}
		code = max(code, reportContended(c, cres, stdout, stderr))
	}
	if slices.Contains(c.Traces, traceTopology) {
		code = max(code, runTopology(c, coreSchedule, stdout, stderr)) // topology.go
	}
	fmt.Fprintf(stdout, "seeds=%d workers=%d total_seconds=%.1f\n", c.Seeds, c.Workers, time.Since(start).Seconds())
	return code
}

// replayAll runs every trace × policy × seed, c.Workers at a time, and
// returns the results by trace, then policy, in seed order.
func replayAll(c *config, schedule scheduleFunc) (map[string]map[string][]*result, error) {
	nodes, err := loadNodes(c.DataDir)
	if err != nil {
		return nil, err
	}
	atomNodes := toNodes(nodes)
	total := totalGPUs(nodes)

	var runs []*replay
	for _, t := range c.Traces {
		if t == traceContended || t == traceTopology {
			continue
		}
		reqs, err := loadRequests(c.DataDir, t)
		if err != nil {
			return nil, err
		}
		for s := 1; s <= c.Seeds; s++ {
			arr, err := arrivals(reqs, total, uint64(s))
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", t, err)
			}
			for _, p := range c.policiesFor(t) {
				runs = append(runs, &replay{Trace: t, Policy: p, Seed: uint64(s),
					Nodes: nodes, Atom: atomNodes, Reqs: reqs, Arrivals: arr, Schedule: schedule})
			}
		}
	}

	out := make([]*result, len(runs))
	errs := make([]error, len(runs))
	parallel(len(runs), c.Workers, func(i int) { out[i], _, errs[i] = runs[i].run() })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	byTrace := map[string]map[string][]*result{}
	for _, r := range out {
		if byTrace[r.Trace] == nil {
			byTrace[r.Trace] = map[string][]*result{}
		}
		byTrace[r.Trace][r.Policy] = append(byTrace[r.Trace][r.Policy], r)
	}
	return byTrace, nil
}

// parallel runs f(0..n-1), workers at a time.
func parallel(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// summary is a policy's results on one trace, averaged over seeds.
type summary struct {
	Rate, MinRate, MaxRate  float64
	Arrived, Placed, Failed float64
	Seconds                 float64 // summed over seeds
	FailedByGPUs            map[int64]float64
	FreeByModel             map[string]float64
	Calls                   int
	CallTime                time.Duration
	Why                     map[string]int // summed over seeds
}

func summarize(rs []*result) summary {
	s := summary{MinRate: 2, FailedByGPUs: map[int64]float64{}, FreeByModel: map[string]float64{}, Why: map[string]int{}}
	n := float64(len(rs))
	for _, r := range rs {
		rate := r.Rate()
		s.Rate += rate / n
		s.MinRate, s.MaxRate = min(s.MinRate, rate), max(s.MaxRate, rate)
		s.Arrived += float64(r.Arrived) / n
		s.Placed += float64(r.Placed) / n
		s.Failed += float64(r.Failed()) / n
		s.Seconds += r.Duration.Seconds()
		for g, k := range r.FailedByGPUs {
			s.FailedByGPUs[g] += float64(k) / n
		}
		for m, k := range r.FreeByModel {
			s.FreeByModel[m] += float64(k) / n
		}
		s.Calls += r.Calls
		s.CallTime += r.CallTime
		for w, k := range r.Why {
			s.Why[w] += k
		}
	}
	return s
}

// report prints one line per trace and policy, the atom/best-fit ratio per
// trace, and returns the exit code.
func report(c *config, results map[string]map[string][]*result, stdout, stderr io.Writer) int {
	code := 0
	for _, t := range c.Traces {
		if t == traceContended || t == traceTopology {
			continue
		}
		sums := map[string]summary{}
		for _, p := range c.policiesFor(t) {
			s := summarize(results[t][p])
			sums[p] = s
			fmt.Fprintf(stdout, "trace=%s policy=%s gpu_alloc_rate=%.4f placed_tasks=%.1f failed_tasks=%.1f arrived_tasks=%.1f min_rate=%.4f max_rate=%.4f seconds=%.2f\n",
				t, p, s.Rate, s.Placed, s.Failed, s.Arrived, s.MinRate, s.MaxRate, s.Seconds)
			fmt.Fprintf(stderr, "trace=%s policy=%s failed_by_gpus=%s free_gpus_by_model=%s", t, p,
				formatCounts(s.FailedByGPUs), formatCounts(s.FreeByModel))
			if s.Calls > 0 {
				fmt.Fprintf(stderr, " schedule_calls=%d schedule_seconds=%.2f us_per_call=%.0f",
					s.Calls, s.CallTime.Seconds(), float64(s.CallTime.Microseconds())/float64(s.Calls))
			}
			fmt.Fprintln(stderr)
			if c.Why && p == policyAtom {
				for _, w := range slices.Sorted(maps.Keys(s.Why)) {
					fmt.Fprintf(stderr, "trace=%s policy=atom why=%q tasks_per_seed=%.1f\n", t, w, float64(s.Why[w])/float64(c.Seeds))
				}
			}
		}
		a, okA := sums[policyAtom]
		b, okB := sums[policyBestFit]
		if !okA || !okB {
			continue
		}
		fmt.Fprintf(stdout, "trace=%s atom_vs_best_fit=%.4f atom_beats_best_fit=%t\n", t, a.Rate/b.Rate, a.Rate > b.Rate)
		if a.Rate <= b.Rate {
			fmt.Fprintf(stderr, "sim: atom does not beat best-fit on trace=%s: gpu_alloc_rate %.4f vs %.4f\n", t, a.Rate, b.Rate)
			code = 1
		}
	}
	return code
}

// formatCounts renders per-key means in key order as "0:1.5,1:20.0,8:3.0".
func formatCounts[K cmp.Ordered](m map[K]float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%v:%.1f", k, m[k]))
	}
	return strings.Join(parts, ",")
}
