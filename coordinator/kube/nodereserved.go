package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/atom-sched/atom/pkg/structs"
)

// The other Pods of a node, those without atom.io/job (neither task Pods
// nor Spark executors), hold part of its allocatable resources:
// DaemonSets (the CNI, the device plugin, log shippers), system Pods and
// anything else the cluster runs on a node. The kubelet counts them when
// it admits a Pod: a task Pod asking what atom thought free (a whole
// node's CPUs, bound to its 8 GPUs) was refused, OutOfcpu, every time.

// startOthers follows the other Pods of every namespace in the backend's
// Pod informer, which keeps of each only its node, phase and what it asks
// (podinformer.go), and waits until it has them all. On each change of
// the resources they hold on a node, onNode(node) runs.
func (s *NodeSync) startOthers(ctx context.Context, onNode func(string)) error {
	note := func(o any, gone bool) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o, gone = d.Obj, true
		}
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		key := p.Namespace + "/" + p.Name
		s.mu.Lock()
		old, had := s.others[key]
		now, holds := otherUse{}, !gone && p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		if holds {
			now = usage(p)
			s.others[key] = now
		} else {
			delete(s.others, key)
		}
		if had {
			t := s.perNode[old.node]
			t.milliCPU, t.mem, t.gpus = t.milliCPU-old.milliCPU, t.mem-old.mem, t.gpus-old.gpus
			s.perNode[old.node] = t
		}
		if holds {
			t := s.perNode[now.node]
			t.milliCPU, t.mem, t.gpus = t.milliCPU+now.milliCPU, t.mem+now.mem, t.gpus+now.gpus
			s.perNode[now.node] = t
		}
		s.mu.Unlock()
		if had && old.node != now.node {
			onNode(old.node)
		}
		if (holds || had) && old != now {
			onNode(now.node)
		}
	}
	reg, err := s.b.onPods(partOther, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { note(o, false) },
		UpdateFunc: func(_, o any) { note(o, false) },
		DeleteFunc: func(o any) { note(o, true) },
	}, 0)
	if err != nil {
		return fmt.Errorf("node sync %s: %w", s.cluster, err)
	}
	s.regs = append(s.regs, handlerReg{s.b.podInf, reg})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return fmt.Errorf("node sync %s: informer of the Pods that are not atom's did not sync: %w", s.cluster, ctx.Err())
	}
	return nil
}

// otherUse is what one Pod that is not atom's holds on its node.
type otherUse struct {
	node          string
	milliCPU, mem int64
	gpus          int64
}

func usage(p *corev1.Pod) otherUse {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	u := otherUse{node: p.Spec.NodeName}
	if q, ok := r[corev1.ResourceCPU]; ok {
		u.milliCPU = q.MilliValue()
	}
	if q, ok := r[corev1.ResourceMemory]; ok {
		u.mem = q.Value()
	}
	if q, ok := r[GPUResource]; ok {
		u.gpus = q.Value()
	}
	return u
}

// withoutOthers takes from n's capacity what Pods that are not atom's
// hold on it (never below 0). Call with s.mu held.
func (s *NodeSync) withoutOthers(n *structs.Node) {
	t := s.perNode[string(n.Name)]
	cpu, mem, gpus := t.milliCPU, t.mem, t.gpus
	n.Capacity.MilliCPU = max(0, n.Capacity.MilliCPU-cpu)
	n.Capacity.Memory = max(0, n.Capacity.Memory-mem)
	if n.Capacity.Accels > 0 {
		n.Capacity.Accels = max(0, n.Capacity.Accels-gpus)
	}
}
