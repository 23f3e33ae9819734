package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// traceContended is the replay with departures, tenants and priorities
// (doc.go); the other traces are packing replays.
const traceContended = "contended"

// workload is the shape of the contended replay.
type workload struct {
	Hours  int     // jobs arrive during [0, Hours); the replay stops at Hours
	Warmup int     // hours before the measured window [Warmup, Hours)
	Demand float64 // GPU-seconds asked per second, in GPUs of the cluster
	// NodeEvery keeps one GPU node in NodeEvery of the node list, in file
	// order, so the replay is small enough to run in minutes.
	NodeEvery int
	Tick      time.Duration // time between scheduling cycles
	StopGrace time.Duration // from a preemption to its victim's stop
	// MinRuntime is the public pool's minimum runtime under atom (not
	// atom-fifo); 0: none.
	MinRuntime time.Duration
	// EqualWeights gives every tenant fair-share weight 1 under atom;
	// otherwise each tenant's weight is set with its quota, in proportion
	// to it, as an admin who gives a team half the quota gives it half
	// the share (tenantWeights).
	EqualWeights bool
}

// weights returns the tenants' fair-share weights under w.
func (w workload) weights() [tenants]float64 {
	var out [tenants]float64
	for t, s := range tenantShares {
		out[t] = 1
		if !w.EqualWeights {
			out[t] = s * tenants // mean 1, in proportion to the quotas
		}
	}
	return out
}

// contendedWorkload is what `make sim` replays: the pools as a cluster
// has them unless an admin sets more, with no minimum runtime (doc.go
// says what one costs here).
var contendedWorkload = workload{
	Hours: 8, Warmup: 1, Demand: 1.5, NodeEvery: 16,
	Tick: 30 * time.Second, StopGrace: 30 * time.Second,
}

// horizon is the replay's length.
func (w workload) horizon() time.Duration { return time.Duration(w.Hours) * time.Hour }

// template is a GPU task of the default pod list with its run time and
// priority: qos BE is low priority, every other class normal.
type template struct {
	request
	Run      time.Duration // deletion_time - scheduled_time
	Priority structs.Priority
}

// loadTemplates reads the GPU tasks of the default pod list that ran (a
// scheduled and a deletion time): the contended replay's job sizes and
// run times.
func loadTemplates(dir string) ([]template, error) {
	path := filepath.Join(dir, podFile("default"))
	rows, err := readCSV(path, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "scheduled_time", "deletion_time")
	if err != nil {
		return nil, err
	}
	var out []template
	for i, row := range rows {
		if row["scheduled_time"] == "" || row["deletion_time"] == "" {
			continue // never ran: no run time
		}
		r, err := parseRequest(row)
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		v, err := parseInts(row, "scheduled_time", "deletion_time")
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		if r.GPUs == 0 || v[1] <= v[0] {
			continue
		}
		t := template{request: r, Run: time.Duration(v[1]-v[0]) * time.Second, Priority: structs.PriorityNormal}
		if row["qos"] == "BE" {
			t.Priority = structs.PriorityLow
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no GPU task with a run time", path)
	}
	return out, nil
}

// sampleGPUNodes keeps every every-th GPU node of nodes, in file order.
func sampleGPUNodes(nodes []node, every int) []node {
	var out []node
	k := 0
	for _, n := range nodes {
		if n.GPUs == 0 {
			continue
		}
		if k%every == 0 {
			out = append(out, n)
		}
		k++
	}
	return out
}

// fitting keeps the templates atom would accept on nodes (sched.Admit, no
// quota): the others could never run there under any policy's rules.
func fitting(tmpls []template, nodes []*structs.Node) []template {
	a := sched.NewAdmitter(&sched.Snapshot{Nodes: nodes})
	var out []template
	for _, t := range tmpls {
		j := t.job("fit", "fit")
		j.Priority = structs.PriorityLow // no quota asked
		if _, err := a.Admit(j, nil, nil); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// job is t as an atom command job of owner with ID id. Its pending
// timeout and preemption limit are beyond any replay, so every policy
// keeps every job until it has run.
func (t *template) job(id structs.JobID, owner structs.UserID) *structs.Job {
	return &structs.Job{
		ID: id, Name: string(id), Kind: structs.KindCommand, Owner: owner, Priority: t.Priority, Replicas: 1,
		Resources: structs.Resources{
			MilliCPU: t.MilliCPU,
			Memory:   t.Memory,
			Accels:   t.GPUs, // AccelType "": any model the selector allows
		},
		Selector:       t.selector(),
		RestartPolicy:  structs.RestartNever,
		PendingTimeout: structs.Duration(365 * 24 * time.Hour),
		MaxPreemptions: math.MaxInt32,
	}
}

// Tenants: tenant 0 submits half of all jobs, tenants 1..7 share the other
// half 7:6:5:4:3:2:1.
const tenants = 8

var tenantShares = func() [tenants]float64 {
	var s [tenants]float64
	s[0] = 0.5
	for i := 1; i < tenants; i++ {
		s[i] = 0.5 * float64(tenants-i) / 28
	}
	return s
}()

// tenantName is tenant i's user name.
func tenantName(i int) structs.UserID { return structs.UserID(fmt.Sprintf("t%d", i+1)) }

// tenantQuotas returns each tenant's public-pool GPU quota: twice the
// cluster's GPUs in all, in proportion to the tenants' shares of jobs.
func tenantQuotas(gpus int64) [tenants]int64 {
	var q [tenants]int64
	for i, s := range tenantShares {
		q[i] = int64(math.Round(2 * float64(gpus) * s))
	}
	return q
}

// arrival is one job submitted during the replay.
type arrival struct {
	At     time.Duration // since the replay started
	Tenant int
	Tmpl   int // index into the templates
}

// streamContended is the PCG stream of the contended arrivals.
const streamContended = 3

// contendedArrivals draws a Poisson stream of jobs over w's horizon:
// templates uniformly with replacement, tenants by tenantShares, at the
// rate that asks for w.Demand × gpus GPU-seconds per second (run times
// counted up to the horizon).
func contendedArrivals(tmpls []template, gpus int64, w workload, seed uint64) ([]arrival, error) {
	if len(tmpls) == 0 || gpus <= 0 {
		return nil, errors.New("contended arrivals need GPU tasks and GPU nodes")
	}
	h := w.horizon()
	var mean float64 // GPU-seconds per job
	for _, t := range tmpls {
		mean += float64(t.GPUs) * min(t.Run, h).Seconds()
	}
	mean /= float64(len(tmpls))
	rate := w.Demand * float64(gpus) / mean // jobs per second

	rng := rand.New(rand.NewPCG(seed, streamContended))
	var out []arrival
	at := 0.0
	for {
		at += rng.ExpFloat64() / rate
		if at >= h.Seconds() {
			return out, nil
		}
		out = append(out, arrival{At: time.Duration(at * float64(time.Second)), Tenant: pickTenant(rng.Float64()), Tmpl: rng.IntN(len(tmpls))})
	}
}

// pickTenant maps u in [0,1) to a tenant by tenantShares.
func pickTenant(u float64) int {
	for i, s := range tenantShares {
		if u < s {
			return i
		}
		u -= s
	}
	return tenants - 1
}

// demandFactor is the GPU-seconds arrivals ask for (run times counted up
// to the horizon), in GPUs of a cluster of gpus over the horizon.
func demandFactor(arr []arrival, tmpls []template, gpus int64, h time.Duration) float64 {
	var s float64
	for _, a := range arr {
		t := &tmpls[a.Tmpl]
		s += float64(t.GPUs) * min(t.Run, h).Seconds()
	}
	return s / (float64(gpus) * h.Seconds())
}
