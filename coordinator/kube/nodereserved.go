package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/atom-sched/atom/pkg/structs"
)

// othersSelector selects the Pods that are not atom's: neither task Pods
// nor Spark executors (both carry atom.io/job). DaemonSets (the CNI, the
// device plugin, log shippers), system Pods and anything else the
// cluster runs on a node hold part of its allocatable resources, which
// the kubelet counts when it admits a Pod: a task Pod asking what atom
// thought free (a whole node's CPUs, bound to its 8 GPUs) was refused,
// OutOfcpu, every time.
const othersSelector = "!" + LabelJob

// startOthers starts the informer of the Pods that are not atom's, in
// every namespace, keeping of each only its node, phase and what it
// asks, and waits until it has synced. On each change of the resources
// they hold on a node, onNode(node) runs.
func (s *NodeSync) startOthers(ctx context.Context, client kubernetes.Interface, onNode func(string)) error {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = othersSelector }))
	inf := f.Core().V1().Pods().Informer()
	_ = inf.SetTransform(func(o any) (any, error) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return o, nil
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: req}}}},
			Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
	})
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
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { note(o, false) },
		UpdateFunc: func(_, o any) { note(o, false) },
		DeleteFunc: func(o any) { note(o, true) },
	}); err != nil {
		return err
	}
	f.Start(s.stopCh)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
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
	r := p.Spec.Containers[0].Resources.Requests
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
