package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// PCG streams: the arrival sequence and the random baseline draw from
// separate generators seeded with the same seed, so every policy sees the
// same arrivals for a seed.
const (
	streamArrivals = 1
	streamRandom   = 2
)

// Inflation: tasks arrive until the GPUs they ask for reach
// inflateNum/inflateDen of the cluster's GPUs.
const inflateNum, inflateDen = 13, 10

// arrivals draws tasks from reqs uniformly with replacement until the GPUs
// asked for reach 130% of totalGPUs. It returns indices into reqs.
func arrivals(reqs []request, totalGPUs int64, seed uint64) ([]int, error) {
	anyGPU := false
	for _, r := range reqs {
		anyGPU = anyGPU || r.GPUs > 0
	}
	if !anyGPU || totalGPUs <= 0 {
		return nil, errors.New("arrivals need GPU tasks and GPU nodes")
	}
	rng := rand.New(rand.NewPCG(seed, streamArrivals))
	var out []int
	var asked int64
	for asked*inflateDen < inflateNum*totalGPUs {
		i := rng.IntN(len(reqs))
		out = append(out, i)
		asked += reqs[i].GPUs
	}
	return out, nil
}

// result is one replay: one trace, one policy, one seed.
type result struct {
	Trace, Policy string
	Seed          uint64
	Arrived       int
	Placed        int
	TotalGPUs     int64
	AllocGPUs     int64
	// FailedByGPUs counts failed tasks by GPUs asked (0 = CPU-only).
	FailedByGPUs map[int64]int
	// FreeByModel counts the GPUs left free at the end per GPU model.
	FreeByModel map[string]int64
	// Outcome is, per arrival, whether it was placed.
	Outcome  []bool
	Duration time.Duration
	// Atom only: Schedule calls, time inside them, failure reasons.
	Calls    int
	CallTime time.Duration
	Why      map[string]int
}

// Rate is the GPU allocation rate at the end of the replay.
func (r *result) Rate() float64 { return float64(r.AllocGPUs) / float64(r.TotalGPUs) }

// Failed is the number of tasks that could not be placed on arrival.
func (r *result) Failed() int { return r.Arrived - r.Placed }

// replay is the input of one replay run.
type replay struct {
	Trace    string
	Policy   string
	Seed     uint64
	Nodes    []node
	Atom     []*structs.Node // Nodes converted once, shared read-only
	Reqs     []request
	Arrivals []int
	Schedule scheduleFunc // atom only
}

// newPlacer returns the replay's policy.
func (rp *replay) newPlacer() (placer, error) {
	if rp.Policy == policyAtom {
		if rp.Schedule == nil {
			return nil, errors.New("atom policy without a scheduling core")
		}
		return newAtom(rp.Atom, rp.Schedule, rp.Seed), nil
	}
	return newBaseline(rp.Policy, rp.Nodes, rp.Seed)
}

// run submits every arrival in order to a fresh policy; a task that does not
// fit on arrival fails and is not retried. Nothing departs.
func (rp *replay) run() (*result, placer, error) {
	start := time.Now()
	p, err := rp.newPlacer()
	if err != nil {
		return nil, nil, err
	}
	res := &result{
		Trace: rp.Trace, Policy: rp.Policy, Seed: rp.Seed,
		Arrived:      len(rp.Arrivals),
		TotalGPUs:    totalGPUs(rp.Nodes),
		FailedByGPUs: map[int64]int{},
		Outcome:      make([]bool, len(rp.Arrivals)),
	}
	for k, i := range rp.Arrivals {
		r := &rp.Reqs[i]
		ok, err := p.place(r)
		if err != nil {
			return nil, nil, fmt.Errorf("trace=%s policy=%s seed=%d arrival %d: %w", rp.Trace, rp.Policy, rp.Seed, k, err)
		}
		res.Outcome[k] = ok
		if ok {
			res.Placed++
		} else {
			res.FailedByGPUs[r.GPUs]++
		}
	}
	res.AllocGPUs = p.allocatedGPUs()
	res.FreeByModel = map[string]int64{}
	for i, f := range p.freeGPUs() {
		if m := rp.Nodes[i].Model; m != "" {
			res.FreeByModel[m] += f
		}
	}
	if a, ok := p.(*atomPolicy); ok {
		res.Calls, res.CallTime, res.Why = a.Calls, a.CallTime, a.Why
	}
	res.Duration = time.Since(start)
	return res, p, nil
}
