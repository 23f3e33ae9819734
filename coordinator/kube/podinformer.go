package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The backend watches Pods once: one informer of every Pod of the
// cluster, whose events it splits by label among those who read them.
// Every watcher of a resource costs the API server per event, so a
// coordinator that watched its own Pods, Spark's executors and the other
// Pods apart had the API server send each Pod's events two or three
// times.
//
//	one Pod informer (every namespace, no selector)
//	  ├─ task Pods: atom.io/managed-by=atom, atom.io/cluster=this cluster,
//	  │  in the namespace ─────────────────────▶ observe (pods.go)
//	  ├─ executor Pods: atom.io/job, no atom.io/managed-by,
//	  │  in the namespace ─────────────────────▶ observeExecutor (executors.go)
//	  └─ other Pods: no atom.io/job, anywhere ─▶ NodeSync, while the leader
//	                                              follows the Nodes (nodereserved.go)
//
// A Pod of another atom cluster, or of one in another namespace, is none
// of the three and nobody reads it. A Pod whose labels change moves from
// one part to the other as a deletion and an addition.

// podPart is one part of the Pod informer.
type podPart string

const (
	partTask     podPart = "task"
	partExecutor podPart = "executor"
	partOther    podPart = "other"
)

// partsIndex indexes the informer's Pods by the parts they are in.
const partsIndex = "parts"

// partsOf lists the parts Pod p is in.
func (b *Backend) partsOf(p *corev1.Pod) []string {
	_, job := p.Labels[LabelJob]
	managed, isManaged := p.Labels[LabelManaged]
	var parts []string
	if p.Namespace == b.cfg.Namespace && managed == "atom" && p.Labels[LabelCluster] == LabelValue(string(b.cfg.Cluster)) {
		parts = append(parts, string(partTask))
	}
	if p.Namespace == b.cfg.Namespace && job && !isManaged {
		parts = append(parts, string(partExecutor))
	}
	if !job {
		parts = append(parts, string(partOther))
	}
	return parts
}

// in reports whether o (a Pod, or the last state of a deleted one) is in
// part.
func (b *Backend) in(part podPart, o any) bool {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, q := range b.partsOf(p) {
		if q == string(part) {
			return true
		}
	}
	return false
}

// newPods makes the backend's Pod informer, for New to start. Of a Pod
// that is only another Pod it keeps only its node, phase and what it asks
// for, all NodeSync reads.
func (b *Backend) newPods() (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactory(b.cfg.Client, b.cfg.Resync)
	b.podInf = f.Core().V1().Pods().Informer()
	b.watchErrors("pods", b.podInf)
	_ = b.podInf.SetTransform(func(o any) (any, error) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return o, nil
		}
		if parts := b.partsOf(p); len(parts) != 1 || parts[0] != string(partOther) {
			return o, nil
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: req}}}},
			Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
	})
	if err := b.podInf.AddIndexers(cache.Indexers{partsIndex: func(o any) ([]string, error) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return b.partsOf(p), nil
	}}); err != nil {
		return nil, err
	}
	b.pods = podView{b: b, part: partTask}
	b.execs = podView{b: b, part: partExecutor}
	return f, nil
}

// onPods has h handle the events of the Pods of part, resynced every
// resync (0: never).
func (b *Backend) onPods(part podPart, h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	f := cache.FilteringResourceEventHandler{FilterFunc: func(o any) bool { return b.in(part, o) }, Handler: h}
	return b.podInf.AddEventHandlerWithResyncPeriod(f, resync)
}

// podView is the Pods of one part of the informer, as a store.
type podView struct {
	b    *Backend
	part podPart
}

// List lists the part's Pods.
func (v podView) List() []any {
	l, _ := v.b.podInf.GetIndexer().ByIndex(partsIndex, string(v.part))
	return l
}

// GetByKey returns the Pod of key ("namespace/name") if it is in the
// part.
func (v podView) GetByKey(key string) (any, bool, error) {
	o, ok, err := v.b.podInf.GetIndexer().GetByKey(key)
	if err != nil || !ok || !v.b.in(v.part, o) {
		return nil, false, err
	}
	return o, true, nil
}
