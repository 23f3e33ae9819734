package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// NodeFromK8s converts Node n of cluster into atom's node:
//
//   - capacity: allocatable cpu (millicores), memory (bytes) and
//     nvidia.com/gpu (whole GPUs), the GPU model from the label
//     nvidia.com/gpu.product; on a node without GPUs, the other extended
//     resources (names with a '/', outside *kubernetes.io/, but not
//     FuseResource) as devices;
//   - pool: the label atom.io/pool (absent: public);
//   - tags: the node's labels; taints: its taints;
//   - state: ready when condition Ready is True, not-ready otherwise
//     (False, Unknown or missing); draining when it is cordoned
//     (spec.unschedulable) and Ready.
func NodeFromK8s(n *corev1.Node, cluster structs.ClusterID) *structs.Node {
	alloc := n.Status.Allocatable
	out := &structs.Node{
		Name:    structs.NodeID(n.Name),
		Cluster: cluster,
		Pool:    structs.PoolID(n.Labels[PoolLabel]),
		State:   structs.NodeNotReady,
		Tags:    maps.Clone(n.Labels),
		Taints:  slices.Clone(n.Spec.Taints),
	}
	if q, ok := alloc[corev1.ResourceCPU]; ok {
		out.Capacity.MilliCPU = q.MilliValue()
	}
	if q, ok := alloc[corev1.ResourceMemory]; ok {
		out.Capacity.Memory = q.Value()
	}
	if q, ok := alloc[GPUResource]; ok && q.Value() > 0 {
		out.Capacity.Accels = q.Value()
		out.Capacity.AccelType = n.Labels[GPUModelLabel]
	}
	if out.Capacity.Accels == 0 {
		for name, q := range alloc {
			k := string(name)
			if k == GPUResource || k == FuseResource || !strings.Contains(k, "/") || strings.Contains(strings.SplitN(k, "/", 2)[0], "kubernetes.io") || q.Value() <= 0 {
				continue
			}
			if out.Capacity.Devices == nil {
				out.Capacity.Devices = map[string]int64{}
			}
			out.Capacity.Devices[k] = q.Value()
		}
	}
	if NodeReady(n) {
		out.State = structs.NodeReady
		if n.Spec.Unschedulable {
			out.State = structs.NodeDraining
		}
	}
	return out
}

// NodeReady reports whether n has condition Ready=True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ApplyFunc commits a state command (the server's Apply, on the leader).
type ApplyFunc func(ctx context.Context, c state.Command) error

// NodeSync follows a cluster's Node objects into the coordinator's state:
// a new or changed Node is a NodeUpsert of NodeFromK8s, a deleted one a
// NodeRemove. A command that fails (not the leader, a node that still
// runs tasks) is tried again at the next change or resync. The
// coordinator runs one per cluster on the leader only, for a term at a
// time. It reads the Nodes and the other Pods from the cluster's
// backend's informers, which watch them anyway.
type NodeSync struct {
	cluster structs.ClusterID
	apply   ApplyFunc
	log     *slog.Logger
	b       *Backend
	regs    []handlerReg // its handlers on the backend's informers
	closed  sync.Once

	mu      sync.Mutex
	last    map[string]*structs.Node // what was last committed, by name
	refused map[string]refusal       // what the state last refused, by name
	others  map[string]otherUse      // Pods that are not atom's, by namespace/name (nodereserved.go)
	perNode map[string]otherUse      // what they hold, summed by node
}

// refusal is a node upsert the state refused (a node of that name is in
// another cluster): the same is not asked again for refuseRetry, and
// logged once.
type refusal struct {
	node *structs.Node
	at   time.Time
}

// refuseRetry is how soon a refused node upsert is asked again unchanged
// (kubelets and kwok update their Node's status every few seconds).
const refuseRetry = time.Minute

// handlerReg is an event handler added to an informer.
type handlerReg struct {
	inf cache.SharedIndexInformer
	reg cache.ResourceEventHandlerRegistration
}

// NewNodeSync starts following the Nodes of backend b's cluster, each
// changed one and every one every resync (0: only changes), and waits
// until the Nodes there were then have been applied or ctx ends.
func NewNodeSync(ctx context.Context, b *Backend, resync time.Duration, apply ApplyFunc, log *slog.Logger) (*NodeSync, error) {
	if log == nil {
		log = slog.Default()
	}
	cluster := b.cfg.Cluster
	s := &NodeSync{cluster: cluster, apply: apply, log: log.With("cluster", cluster), b: b, last: map[string]*structs.Node{}, refused: map[string]refusal{},
		others: map[string]otherUse{}, perNode: map[string]otherUse{}}
	// What other Pods hold comes first, so a node's first upsert has it.
	if err := s.startOthers(ctx, func(node string) {
		if o, ok, _ := b.nodes.GetStore().GetByKey(node); ok {
			s.upsert(o)
		}
	}); err != nil {
		s.Close()
		return nil, err
	}
	reg, err := b.nodes.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.upsert(o) },
		UpdateFunc: func(_, o any) { s.upsert(o) },
		DeleteFunc: func(o any) { s.remove(o) },
	}, resync)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("node sync %s: %w", cluster, err)
	}
	s.regs = append(s.regs, handlerReg{b.nodes, reg})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		s.Close()
		return nil, fmt.Errorf("node sync %s: informer did not sync: %w", cluster, ctx.Err())
	}
	return s, nil
}

// Close stops following.
func (s *NodeSync) Close() {
	s.closed.Do(func() {
		for _, r := range s.regs {
			_ = r.inf.RemoveEventHandler(r.reg)
		}
	})
}

func (s *NodeSync) upsert(o any) {
	k, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	n := NodeFromK8s(k, s.cluster)
	s.mu.Lock()
	s.withoutOthers(n)
	same := reflect.DeepEqual(s.last[k.Name], n)
	r, wasRefused := s.refused[k.Name]
	s.mu.Unlock()
	if same || (wasRefused && reflect.DeepEqual(r.node, n) && time.Since(r.at) < refuseRetry) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.apply(ctx, &state.NodeUpsert{Node: n}); err != nil {
		if !wasRefused {
			s.log.Warn("node upsert failed", "node", k.Name, "err", err)
		}
		if errors.Is(err, state.ErrInvalid) {
			s.mu.Lock()
			s.refused[k.Name] = refusal{node: n, at: time.Now()}
			s.mu.Unlock()
		}
		return
	}
	s.mu.Lock()
	s.last[k.Name] = n
	delete(s.refused, k.Name)
	s.mu.Unlock()
}

func (s *NodeSync) remove(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	k, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.apply(ctx, &state.NodeRemove{Name: structs.NodeID(k.Name), Cluster: s.cluster})
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		// It still runs tasks: keep it, not ready, so nothing new lands.
		s.log.Warn("node remove failed; marking it not-ready", "node", k.Name, "err", err)
		n := NodeFromK8s(k, s.cluster)
		n.State = structs.NodeNotReady
		if err := s.apply(ctx, &state.NodeUpsert{Node: n}); err != nil {
			s.log.Warn("node upsert failed", "node", k.Name, "err", err)
		}
	}
	s.mu.Lock()
	delete(s.last, k.Name)
	s.mu.Unlock()
}
