package kube

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// foreignExecs remembers executor Pods whose driver is another atom
// cluster's task Pod: another coordinator's (or another cluster of this
// one) in the same namespace. Such a Pod is that cluster's to bind or
// delete; this backend leaves it alone.
type foreignExecs struct {
	mu   sync.Mutex
	uids map[types.UID]bool // executor Pod → its driver is another cluster's
}

// foreign reports whether executor Pod p's driver is a Pod that atom
// manages for another cluster than this backend's. Its driver is looked
// up in the API server only when this backend's informer does not have
// it (then once per Pod).
func (b *Backend) foreign(ctx context.Context, p *corev1.Pod) bool {
	var ref *metav1.OwnerReference
	for i, r := range p.OwnerReferences {
		if r.Kind == "Pod" && r.APIVersion == "v1" {
			ref = &p.OwnerReferences[i]
		}
	}
	if ref == nil {
		return false
	}
	if _, ok, _ := b.pods.GetByKey(p.Namespace + "/" + ref.Name); ok {
		return false
	}
	b.foreignExecs.mu.Lock()
	known, seen := b.foreignExecs.uids[p.UID]
	b.foreignExecs.mu.Unlock()
	if seen {
		return known
	}
	d, err := b.cfg.Client.CoreV1().Pods(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return true // cannot tell now: touch nothing, ask again next time
	}
	other := err == nil && d.UID == ref.UID && d.Labels[LabelManaged] == "atom" && d.Labels[LabelCluster] != LabelValue(string(b.cfg.Cluster))
	b.foreignExecs.mu.Lock()
	if b.foreignExecs.uids == nil {
		b.foreignExecs.uids = map[types.UID]bool{}
	}
	b.foreignExecs.uids[p.UID] = other
	b.foreignExecs.mu.Unlock()
	if other {
		b.log.Info("leaving alone an executor pod of another atom cluster's driver", "pod", p.Name, "driver", d.Name, "driverCluster", d.Labels[LabelCluster])
	}
	return other
}

// forgetForeign drops what foreign remembered of Pod uid, once it is gone.
func (b *Backend) forgetForeign(uid types.UID) {
	b.foreignExecs.mu.Lock()
	delete(b.foreignExecs.uids, uid)
	b.foreignExecs.mu.Unlock()
}
