package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Policy names, in output order.
const (
	policyAtom     = "atom"
	policyFirstFit = "first-fit"
	policyBestFit  = "best-fit"
	policyRandom   = "random"
)

var policies = []string{policyAtom, policyFirstFit, policyBestFit, policyRandom}

// placer places tasks one at a time, without departures.
type placer interface {
	// place tries to put r on a node now. It reports whether r was placed;
	// a task that does not fit is dropped by the caller, never retried. An
	// error means the replay itself is broken (an invalid plan).
	place(r *request) (bool, error)
	// allocatedGPUs returns the GPUs held by all placed tasks.
	allocatedGPUs() int64
	// freeGPUs returns the GPUs left free on each node, in node order.
	freeGPUs() []int64
}

// free is what a node has left in the baselines' accounting of raw requests.
type free struct {
	MilliCPU, Memory, GPUs int64
}

// baseline is a classic node-scoring policy over raw requests: a task fits
// a node when its cpu_milli, memory and GPUs fit what the node has free and
// the node's model is one the task accepts. CPU-only tasks may go to GPU
// nodes. choose picks among the feasible nodes.
type baseline struct {
	nodes  []node
	free   []free
	choose func(b *baseline, r *request) int // node index, or -1 if none fits
	rng    *rand.Rand                        // random only
	alloc  int64
	// Placed records, per placed task, the request and the node index, so
	// tests can recompute every node's use.
	Placed []placement
}

// placement is one placed task of a baseline.
type placement struct {
	Req  *request
	Node int
}

// newBaseline returns the named baseline over nodes; seed drives random.
func newBaseline(name string, nodes []node, seed uint64) (*baseline, error) {
	b := &baseline{nodes: nodes, free: make([]free, len(nodes))}
	for i, n := range nodes {
		b.free[i] = free{MilliCPU: n.MilliCPU, Memory: n.MemoryMiB << 20, GPUs: n.GPUs}
	}
	switch name {
	case policyFirstFit:
		b.choose = (*baseline).firstFit
	case policyBestFit:
		b.choose = (*baseline).bestFit
	case policyRandom:
		b.choose = (*baseline).random
		b.rng = rand.New(rand.NewPCG(seed, streamRandom))
	default:
		return nil, fmt.Errorf("unknown baseline %q", name)
	}
	return b, nil
}

// fits reports whether r fits node i now.
func (b *baseline) fits(i int, r *request) bool {
	f := b.free[i]
	if f.MilliCPU < r.MilliCPU || f.Memory < r.Memory || f.GPUs < r.GPUs {
		return false
	}
	return len(r.Models) == 0 || slices.Contains(r.Models, b.nodes[i].Model)
}

func (b *baseline) place(r *request) (bool, error) {
	i := b.take(r)
	if i < 0 {
		return false, nil
	}
	b.Placed = append(b.Placed, placement{Req: r, Node: i})
	return true, nil
}

// take puts r on the node the policy chooses and returns its index, or
// -1 if no node fits.
func (b *baseline) take(r *request) int {
	i := b.choose(b, r)
	if i >= 0 {
		b.add(i, r, 1)
	}
	return i
}

// release gives back what r took on node i.
func (b *baseline) release(r *request, i int) { b.add(i, r, -1) }

// add takes sign × r of node i.
func (b *baseline) add(i int, r *request, sign int64) {
	f := &b.free[i]
	f.MilliCPU -= sign * r.MilliCPU
	f.Memory -= sign * r.Memory
	f.GPUs -= sign * r.GPUs
	b.alloc += sign * r.GPUs
}

func (b *baseline) allocatedGPUs() int64 { return b.alloc }

func (b *baseline) freeGPUs() []int64 {
	out := make([]int64, len(b.free))
	for i, f := range b.free {
		out[i] = f.GPUs
	}
	return out
}

// firstFit picks the first feasible node in file order.
func (b *baseline) firstFit(r *request) int {
	for i := range b.nodes {
		if b.fits(i, r) {
			return i
		}
	}
	return -1
}

// bestFit picks the feasible node left with the fewest free GPUs after
// placing r, ties broken by the least free CPU left, then file order. For
// CPU-only tasks it picks the least free CPU left, then file order.
func (b *baseline) bestFit(r *request) int {
	best := -1
	var bestGPU, bestCPU int64
	for i := range b.nodes {
		if !b.fits(i, r) {
			continue
		}
		gpu, cpu := b.free[i].GPUs-r.GPUs, b.free[i].MilliCPU-r.MilliCPU
		if r.GPUs == 0 {
			gpu = 0
		}
		if best < 0 || gpu < bestGPU || (gpu == bestGPU && cpu < bestCPU) {
			best, bestGPU, bestCPU = i, gpu, cpu
		}
	}
	return best
}

// random picks a feasible node uniformly at random.
func (b *baseline) random(r *request) int {
	n, pick := 0, -1
	for i := range b.nodes {
		if b.fits(i, r) {
			// Reservoir sampling: node i replaces the pick with chance 1/n.
			n++
			if b.rng.IntN(n) == 0 {
				pick = i
			}
		}
	}
	return pick
}
