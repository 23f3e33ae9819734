package main

import (
	"math"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// figures are one contended replay's measures over its measured window
// [Warmup, Hours) (doc.go defines each).
type figures struct {
	GPUUtil float64 // GPU-hours held / GPU-hours of the cluster
	Jain    float64 // mean over one-hour windows
	// ShareJain is Jain's index of what tenants received over their
	// max-min fair share (shareJain), mean over one-hour windows: a
	// diagnostic, no target.
	ShareJain float64
	// Received is, per tenant, GPU-hours received / asked for over the
	// whole window.
	Received          [tenants]float64
	WaitP50, WaitP99  float64 // seconds, normal jobs
	PreemptedGPUHours float64
	Preemptions       int
	Arrived           int // jobs arrived in the window
	NeverPlaced       int // of those, jobs not placed by the horizon
}

// measure computes the figures of a replay of jobs on a cluster of gpus.
func measure(jobs []*simJob, w workload, gpus int64) figures {
	from, to := time.Duration(w.Warmup)*time.Hour, w.horizon()
	var f figures
	var held float64 // GPU-seconds
	var waits []float64
	for _, j := range jobs {
		for _, s := range j.Held {
			held += float64(j.GPUs) * overlap(s.From, s.To, from, to).Seconds()
		}
		for _, l := range j.Lost {
			if l.At >= from && l.At < to {
				f.PreemptedGPUHours += l.GPUSeconds / 3600
				f.Preemptions++
			}
		}
		if j.At < from {
			continue
		}
		f.Arrived++
		wait := to - j.At
		if j.First >= 0 {
			wait = j.First - j.At
		} else {
			f.NeverPlaced++
		}
		if j.Priority == structs.PriorityNormal {
			waits = append(waits, wait.Seconds())
		}
	}
	f.GPUUtil = held / (float64(gpus) * (to - from).Seconds())
	slices.Sort(waits)
	f.WaitP50, f.WaitP99 = percentile(waits, 0.50), percentile(waits, 0.99)

	hours := 0
	for h := from; h < to; h += time.Hour {
		f.Jain += windowJain(jobs, h, h+time.Hour, to)
		f.ShareJain += shareJain(jobs, w.weights(), h, h+time.Hour, to)
		hours++
	}
	f.Jain /= float64(hours)
	f.ShareJain /= float64(hours)
	asked, got := window(jobs, from, to, to)
	for t := range tenants {
		if asked[t] > 0 {
			f.Received[t] = got[t] / asked[t]
		}
	}
	return f
}

// windowJain is Jain's fairness index over the tenants that asked for
// GPUs in [from, to) of x = GPU-seconds received / GPU-seconds asked for
// there. A job asks for its GPUs from its arrival until it ends (or the
// horizon, end) and receives them while it holds them.
func windowJain(jobs []*simJob, from, to, end time.Duration) float64 {
	asked, got := window(jobs, from, to, end)
	var x []float64
	for t := range tenants {
		if asked[t] > 0 {
			x = append(x, got[t]/asked[t])
		}
	}
	return jain(x)
}

// shareJain is Jain's index, over the same tenants, of x = GPU-seconds
// received / weighted max-min fair share of all received in [from, to):
// what the tenants' weights would give each, none more than it asked for.
func shareJain(jobs []*simJob, weights [tenants]float64, from, to, end time.Duration) float64 {
	asked, got := window(jobs, from, to, end)
	var total float64
	for _, g := range got {
		total += g
	}
	fair := maxMin(asked, weights, total)
	var x []float64
	for t := range tenants {
		if asked[t] > 0 {
			x = append(x, got[t]/fair[t])
		}
	}
	return jain(x)
}

// window sums, per tenant, the GPU-seconds asked for and received in
// [from, to) (windowJain).
func window(jobs []*simJob, from, to, end time.Duration) (asked, got [tenants]float64) {
	for _, j := range jobs {
		done := end
		if j.Done >= 0 {
			done = j.Done
		}
		g := float64(j.GPUs)
		asked[j.Tenant] += g * overlap(j.At, done, from, to).Seconds()
		for _, s := range j.Held {
			got[j.Tenant] += g * overlap(s.From, s.To, from, to).Seconds()
		}
	}
	return asked, got
}

// maxMin divides capacity among demands by weighted max-min fairness
// (water filling): parts in proportion to the weights, none more than its
// demand, what one leaves shared by the rest.
func maxMin(demand, weights [tenants]float64, capacity float64) [tenants]float64 {
	var out [tenants]float64
	for {
		var w float64
		for t, d := range demand {
			if d > out[t] {
				w += weights[t]
			}
		}
		if w == 0 || capacity <= 0 {
			return out
		}
		unit, filled := capacity/w, false
		for t, d := range demand {
			if d > out[t] && d-out[t] <= unit*weights[t] {
				capacity -= d - out[t]
				out[t], filled = d, true
			}
		}
		if !filled {
			for t, d := range demand {
				if d > out[t] {
					out[t] += unit * weights[t]
				}
			}
			return out
		}
	}
}

// jain is Jain's fairness index (Σx)² / (n Σx²): 1 when all x are equal,
// 1/n when one has everything. No x, or all zero, is equal: 1.
func jain(x []float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(x)) * sq)
}

// overlap is the length of [a, b) ∩ [from, to).
func overlap(a, b, from, to time.Duration) time.Duration {
	return max(0, min(b, to)-max(a, from))
}

// percentile is the nearest-rank p-quantile of sorted values; 0 when
// there are none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
