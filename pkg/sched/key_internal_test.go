package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// Jobs share an explanation only when their contexts ask the same
// question (whyKey): on random clusters and jobs that differ a little,
// every shared explanation is the one the job gets alone.
func TestWhyKeySharesOnlySameQuestions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 7))
		pick := func(n int) int { return r.IntN(n) }
		snap := &Snapshot{Jobs: map[structs.JobID]*structs.Job{},
			Pools:  []*structs.Pool{{Name: "vision", Project: "vision", LendIdle: pick(2) == 0}},
			Quotas: map[structs.Scope]structs.ResourceList{}, Usage: map[structs.Scope]structs.ResourceList{}}
		if pick(2) == 0 {
			snap.Cache = map[structs.ClusterID]map[string]bool{"a": {}}
		}
		for i := range 8 {
			n := &structs.Node{Name: structs.NodeID(fmt.Sprintf("n%d", i)), Cluster: structs.ClusterID([]string{"a", "b"}[pick(2)]),
				State: []structs.NodeState{structs.NodeReady, structs.NodeReady, structs.NodeNotReady}[pick(3)],
				Tags:  map[string]string{"rack": []string{"r1", "r2"}[pick(2)]}}
			switch pick(3) {
			case 0:
				n.Capacity = structs.Resources{MilliCPU: 8000, Memory: 64 << 30}
			case 1:
				n.Capacity = structs.Resources{MilliCPU: 32000, Memory: 256 << 30, Accels: 4, AccelType: []string{"A", "B"}[pick(2)]}
				if pick(3) == 0 {
					n.Quarantined = []structs.Quarantine{{Accel: 0, Reason: "ecc"}}
				}
			default:
				n.Capacity = structs.Resources{MilliCPU: 4000, Memory: 16 << 30, Devices: map[string]int64{"jetson": 2}}
			}
			if pick(4) == 0 {
				n.Taints = []corev1.Taint{{Key: "maint", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			}
			if pick(4) == 0 {
				n.Pool = "vision"
			}
			snap.Nodes = append(snap.Nodes, n)
		}
		var pending []*structs.Job
		for i := range 40 {
			j := &structs.Job{ID: structs.JobID(fmt.Sprintf("j%02d", i)), Kind: structs.KindCommand, Owner: "u1", Replicas: 1 + pick(3),
				State: structs.JobPending, SubmitTime: t0, Priority: []structs.Priority{structs.PriorityLow, structs.PriorityNormal, structs.PriorityHigh}[pick(3)]}
			switch pick(3) {
			case 0:
				j.Resources = structs.Resources{MilliCPU: int64(1+pick(40)) * 1000, Memory: 4 << 30}
			case 1:
				j.Resources = structs.Resources{Accels: int64(1 + pick(5)), AccelType: []string{"", "A", "B"}[pick(3)]}
			default:
				j.Resources = structs.Resources{MilliCPU: 1000, Memory: 1 << 30, Devices: map[string]int64{"jetson": int64(1 + pick(3))}}
			}
			if pick(3) == 0 {
				j.Project = "vision"
			}
			if pick(4) == 0 {
				j.CacheMountPath = structs.DefaultCachePath
			}
			if pick(4) == 0 {
				j.Cluster = "b"
			}
			if pick(5) == 0 {
				j.NodeName = structs.NodeID(fmt.Sprintf("n%d", pick(7)))
			}
			if pick(4) == 0 {
				j.Selector = []string{"rack=r1", "rack=r2", "rack in (r1,r2)"}[pick(3)]
			}
			if pick(4) == 0 {
				j.Tolerations = []corev1.Toleration{{Key: []string{"maint", "other"}[pick(2)], Operator: corev1.TolerationOpExists}}
			}
			if pick(4) == 0 {
				j.Affinity.SpreadReplicas = true
			}
			if pick(3) == 0 {
				j.Kind = structs.KindMPI
			}
			if pick(6) == 0 {
				j.Kind, j.Replicas, j.MinAvailable = structs.KindService, 3, 1+pick(3)
			}
			snap.Jobs[j.ID] = j
			pending = append(pending, j)
		}
		in := Input{Pending: pending, Now: t0.Add(time.Minute)}
		shared := Schedule(snap, in)
		shareWhy = false
		alone := Schedule(snap, in)
		shareWhy = true
		for id, why := range alone.Pending {
			require.Equal(t, why.Message, shared.Pending[id].Message, "seed %d job %s: %+v", seed, id, snap.Jobs[id])
		}
	}
}
