// Package schedtest builds clusters and jobs for tests of the scheduling
// core and plays plans forward the way the coordinator's state machine
// does, checking the invariants after every step.
package schedtest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

const (
	Gi = int64(1) << 30
)

// GPUNode returns a ready public node with n accelerators of type t, each
// bound to 12 cores and 96 GiB (the scenarios' G8(T) when n is 8).
func GPUNode(name, t string, n int64) *structs.Node {
	return &structs.Node{
		Name: structs.NodeID(name), State: structs.NodeReady,
		Capacity: structs.Resources{MilliCPU: 12000 * n, Memory: 96 * Gi * n, AccelType: t, Accels: n},
		Tags:     map[string]string{},
	}
}

// G8 is an 8-accelerator node of type t.
func G8(name, t string) *structs.Node { return GPUNode(name, t, 8) }

// CPUNode returns a ready public CPU-only node.
func CPUNode(name string, cores, memGi int64) *structs.Node {
	return &structs.Node{
		Name: structs.NodeID(name), State: structs.NodeReady,
		Capacity: structs.Resources{MilliCPU: cores * 1000, Memory: memGi * Gi},
		Tags:     map[string]string{},
	}
}

// Label sets node n's tags kv (key, value, key, value...) and returns n.
func Label(n *structs.Node, kv ...string) *structs.Node {
	mustf(len(kv)%2 == 0, "Label: odd number of arguments")
	for i := 0; i < len(kv); i += 2 {
		n.Tags[kv[i]] = kv[i+1]
	}
	return n
}

// C64 is a 64-core, 256 GiB CPU node.
func C64(name string) *structs.Node { return CPUNode(name, 64, 256) }

// JobBuilder builds a job fluently: schedtest.NewJob("j1", "u1").GPU("A", 8).Obj().
type JobBuilder struct{ j structs.Job }

// NewJob starts a normal, single-replica command job owned by owner.
func NewJob(id, owner string) *JobBuilder {
	return &JobBuilder{j: structs.Job{
		ID: structs.JobID(id), Name: id, Kind: structs.KindCommand, Owner: structs.UserID(owner),
		Replicas: 1, State: structs.JobPending,
	}}
}

func (b *JobBuilder) Kind(k structs.JobKind) *JobBuilder { b.j.Kind = k; return b }
func (b *JobBuilder) Project(p string) *JobBuilder {
	b.j.Project = structs.ProjectID(p)
	return b
}
func (b *JobBuilder) Priority(p structs.Priority) *JobBuilder { b.j.Priority = p; return b }
func (b *JobBuilder) Low() *JobBuilder                        { b.j.Priority = structs.PriorityLow; return b }
func (b *JobBuilder) High() *JobBuilder                       { b.j.Priority = structs.PriorityHigh; return b }
func (b *JobBuilder) Replicas(n int) *JobBuilder              { b.j.Replicas = n; return b }

// MPI makes the job an MPI gang of n replicas.
func (b *JobBuilder) MPI(n int) *JobBuilder {
	b.j.Kind, b.j.Replicas = structs.KindMPI, n
	return b
}

// Service makes the job a service of n replicas, minAvailable min.
func (b *JobBuilder) Service(n, min int) *JobBuilder {
	b.j.Kind, b.j.Replicas, b.j.MinAvailable = structs.KindService, n, min
	b.j.RestartPolicy = structs.RestartAlways
	return b
}

// GPU asks n accelerators of type t ("" any) per replica.
func (b *JobBuilder) GPU(t string, n int64) *JobBuilder {
	b.j.Resources.AccelType, b.j.Resources.Accels = t, n
	return b
}

// CPU asks cores and GiB of memory per replica.
func (b *JobBuilder) CPU(cores, memGi int64) *JobBuilder {
	b.j.Resources.MilliCPU, b.j.Resources.Memory = cores*1000, memGi*Gi
	return b
}

func (b *JobBuilder) Selector(s string) *JobBuilder { b.j.Selector = s; return b }
func (b *JobBuilder) Node(n string) *JobBuilder     { b.j.NodeName = structs.NodeID(n); return b }
func (b *JobBuilder) Spread() *JobBuilder           { b.j.Affinity.SpreadReplicas = true; return b }

// Required keeps the job's replicas in one domain of level (or it waits).
func (b *JobBuilder) Required(level string) *JobBuilder {
	b.j.Topology = &structs.JobTopology{Required: level}
	return b
}

// Preferred keeps the job's replicas in one domain of level if one has
// room, else of a wider level, else anywhere.
func (b *JobBuilder) Preferred(level string) *JobBuilder {
	b.j.Topology = &structs.JobTopology{Preferred: level}
	return b
}
func (b *JobBuilder) Labels(kv ...string) *JobBuilder {
	if b.j.Labels == nil {
		b.j.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.j.Labels[kv[i]] = kv[i+1]
	}
	return b
}
func (b *JobBuilder) With(sel string) *JobBuilder {
	b.j.Affinity.WithJobs = append(b.j.Affinity.WithJobs, sel)
	return b
}
func (b *JobBuilder) Away(sel string) *JobBuilder {
	b.j.Affinity.AwayFromJobs = append(b.j.Affinity.AwayFromJobs, sel)
	return b
}
func (b *JobBuilder) Tolerate(key, value string) *JobBuilder {
	b.j.Tolerations = append(b.j.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value})
	return b
}
func (b *JobBuilder) Timeout(d time.Duration) *JobBuilder {
	b.j.PendingTimeout = structs.Duration(d)
	return b
}

// Fallback adds a fallback shape (replicas × accelerators of type t).
func (b *JobBuilder) Fallback(replicas int, t string, n int64) *JobBuilder {
	r := b.j.Resources
	r.AccelType, r.Accels = t, n
	b.j.Fallbacks = append(b.j.Fallbacks, structs.Shape{Replicas: replicas, Resources: r})
	return b
}
func (b *JobBuilder) DowngradeAfter(d time.Duration) *JobBuilder {
	b.j.DowngradeAfter = structs.Duration(d)
	return b
}

// Obj returns a fresh copy of the job.
func (b *JobBuilder) Obj() *structs.Job { j := b.j; return &j }

// Taint returns a NoSchedule taint key=value.
func Taint(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

func mustf(cond bool, format string, a ...any) {
	if !cond {
		panic(fmt.Sprintf(format, a...))
	}
}
