package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
)

// startClaims starts the informer of the namespace's
// PersistentVolumeClaims: all of them, not only those of `coordinator
// volume create`, since a job may name any claim its Pods can mount. The
// leader asks it (Claims) which cluster holds a job's volumes, so the job
// goes only there (sched.Snapshot.Volumes).
func (b *Backend) startClaims() {
	f := informers.NewSharedInformerFactoryWithOptions(b.cfg.Client, b.cfg.Resync, informers.WithNamespace(b.cfg.Namespace))
	b.claims = f.Core().V1().PersistentVolumeClaims().Informer()
	b.watchErrors("persistentvolumeclaims in namespace "+b.cfg.Namespace, b.claims)
	// Only names and deletion marks are read: keep no spec, status or
	// managed fields in memory.
	_ = b.claims.SetTransform(func(o any) (any, error) {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
			return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pvc.Name, Namespace: pvc.Namespace, UID: pvc.UID,
				ResourceVersion: pvc.ResourceVersion, DeletionTimestamp: pvc.DeletionTimestamp}}, nil
		}
		return o, nil
	})
	f.Start(b.stopCh)
}

// Claims reports which of names are PersistentVolumeClaims of the
// backend's namespace, as its informer last saw them; a claim being
// deleted counts as none (Kubernetes starts no new Pod with it).
func (b *Backend) Claims(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		o, ok, err := b.claims.GetStore().GetByKey(b.cfg.Namespace + "/" + n)
		if err != nil || !ok {
			continue
		}
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok && pvc.DeletionTimestamp == nil {
			out[n] = true
		}
	}
	return out
}
