package schedtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// GPUTypes are the accelerator types of generated clusters.
var GPUTypes = []string{"A100", "H100", "L40S", "V100"}

// GenCluster generates nodes: 80% GPU nodes (the four GPUTypes, 2, 4 or 8
// accelerators each, 12 cores and 96 GiB per accelerator) and 20% CPU nodes
// (64 cores, 256 GiB), deterministically from seed.
func GenCluster(nodes int, seed uint64) []*structs.Node {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]*structs.Node, 0, nodes)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		if i%5 == 4 {
			out = append(out, C64(name))
			continue
		}
		t := GPUTypes[r.IntN(len(GPUTypes))]
		n := GPUNode(name, t, []int64{2, 4, 8}[r.IntN(3)])
		n.Tags["model"] = t
		out = append(out, n)
	}
	return out
}

// GenJobs generates pending normal jobs with the mix: 15% CPU-only
// (1-16 cores), 65% one accelerator (a third pin a type), 15% 2-4
// accelerators, 5% gangs of 2-8 replicas × 8 accelerators.
func GenJobs(n int, seed uint64, submit time.Time) []*structs.Job {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]*structs.Job, 0, n)
	for i := range n {
		j := &structs.Job{
			ID: structs.JobID(fmt.Sprintf("job-%06d", i)), Kind: structs.KindCommand,
			Owner: structs.UserID(fmt.Sprintf("u%d", i%50)), Replicas: 1,
			State: structs.JobPending, SubmitTime: submit.Add(time.Duration(i) * time.Millisecond),
		}
		switch p := r.IntN(100); {
		case p < 15:
			c := int64(1 + r.IntN(16))
			j.Resources = structs.Resources{MilliCPU: c * 1000, Memory: c * 4 * Gi}
		case p < 80:
			j.Resources = structs.Resources{Accels: 1}
			if r.IntN(3) == 0 {
				j.Resources.AccelType = GPUTypes[r.IntN(len(GPUTypes))]
			}
		case p < 95:
			j.Resources = structs.Resources{Accels: int64(2 + r.IntN(3)), AccelType: GPUTypes[r.IntN(len(GPUTypes))]}
		default:
			j.Kind, j.Replicas = structs.KindMPI, 2+r.IntN(7)
			j.Resources = structs.Resources{Accels: 8, AccelType: GPUTypes[r.IntN(len(GPUTypes))]}
		}
		out = append(out, j)
	}
	return out
}

// GenSnapshot wraps nodes and jobs in a snapshot with no tasks. Every
// owner gets an ample quota and each job is charged as Admit would. The
// owners' fair-share usage differs (owner k of n has used k hours of a
// GPU), so jobs are ordered by fair share as the coordinator orders them.
func GenSnapshot(nodes []*structs.Node, jobs []*structs.Job) *sched.Snapshot {
	s := &sched.Snapshot{Nodes: nodes, Jobs: make(map[structs.JobID]*structs.Job, len(jobs)),
		Quotas: map[structs.Scope]structs.ResourceList{}, Usage: map[structs.Scope]structs.ResourceList{}}
	for _, j := range jobs {
		s.Jobs[j.ID] = j
		scope := j.ChargeScope()
		if s.Quotas[scope] == nil {
			l := structs.ResourceList{structs.KeyCPU: 1 << 50, structs.KeyMemory: 1 << 60, structs.KeyGPUAny: 1 << 40}
			for _, t := range GPUTypes {
				l[structs.GPUKey(t)] = 1 << 40
			}
			s.Quotas[scope], s.Usage[scope] = l, structs.ResourceList{}
		}
		j.ChargedScope, j.Charged = scope, structs.Charge(j.ShapeAt(0))
		for k, v := range j.Charged {
			s.Usage[scope][k] += v
		}
	}
	usage := sched.Usage{Scopes: map[structs.Scope]float64{}}
	for i, scope := range slices.Sorted(maps.Keys(s.Quotas)) {
		usage.Scopes[scope] = float64(i) * 3600
	}
	s.FairShare = sched.Positions(&usage, nil, s.Jobs, 0)
	return s
}
