package daemon

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// volumes is the API's VolumeStore over the kubernetes clusters' backends.
type volumes struct {
	kube map[structs.ClusterID]*kube.Backend
}

// volumesOf returns the VolumeStore of backend be, nil when it drives no
// kubernetes cluster.
func volumesOf(be any) api.VolumeStore {
	r, ok := be.(*router)
	if !ok || len(r.kube) == 0 {
		return nil
	}
	return &volumes{kube: r.kube}
}

func (v *volumes) backend(c structs.ClusterID) (*kube.Backend, structs.ClusterID, error) {
	names := slices.Sorted(func(yield func(structs.ClusterID) bool) {
		for n := range v.kube {
			if !yield(n) {
				return
			}
		}
	})
	if c == "" {
		if len(names) == 1 {
			return v.kube[names[0]], names[0], nil
		}
		return nil, "", &api.StatusError{Status: http.StatusBadRequest,
			Msg: fmt.Sprintf("give the cluster: the kubernetes clusters are %s", joinClusters(names))}
	}
	b, ok := v.kube[c]
	if !ok {
		return nil, "", &api.StatusError{Status: http.StatusBadRequest,
			Msg: fmt.Sprintf("cluster %q is not a kubernetes cluster: use one of %s", c, joinClusters(names))}
	}
	return b, c, nil
}

func joinClusters(names []structs.ClusterID) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

func kubeError(err error, what string) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		return &api.StatusError{Status: http.StatusConflict, Msg: what + " already exists"}
	case apierrors.IsNotFound(err):
		return &api.StatusError{Status: http.StatusNotFound, Msg: what + " not found"}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return &api.StatusError{Status: http.StatusUnprocessableEntity, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	// The API server did not answer (or failed): say so, and that a retry
	// is the way, not the generic "outcome is unknown ... job submission".
	return fmt.Errorf("%s: the cluster's API server did not answer: %w: retry once it does", what, err)
}

func (v *volumes) CreateVolume(ctx context.Context, cluster structs.ClusterID, name string, size int64, owner structs.UserID) (*wire.Volume, error) {
	b, c, err := v.backend(cluster)
	if err != nil {
		return nil, err
	}
	pvc, err := b.CreateVolume(ctx, name, size, owner)
	if err != nil {
		return nil, kubeError(err, fmt.Sprintf("volume %q in cluster %s", name, c))
	}
	return &wire.Volume{Name: pvc.Name, Cluster: c, Size: size, Class: kube.VolumeClass, Phase: string(pvc.Status.Phase), Owner: owner}, nil
}

func (v *volumes) Volumes(ctx context.Context) ([]wire.Volume, error) {
	var out []wire.Volume
	for c, b := range v.kube {
		pvcs, err := b.Volumes(ctx)
		if err != nil {
			return nil, kubeError(err, fmt.Sprintf("volumes of cluster %s", c))
		}
		for _, p := range pvcs {
			w := wire.Volume{Name: p.Name, Cluster: c, Phase: string(p.Status.Phase), Owner: structs.UserID(p.Annotations[kube.LabelOwner])}
			if p.DeletionTimestamp != nil {
				w.Phase = "Terminating" // as kubectl says: deleted, its finalizer not yet removed
			}
			if p.Spec.StorageClassName != nil {
				w.Class = *p.Spec.StorageClassName
			}
			if q, ok := p.Spec.Resources.Requests["storage"]; ok {
				w.Size = q.Value()
			}
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b wire.Volume) int {
		if a.Cluster != b.Cluster {
			return strings.Compare(string(a.Cluster), string(b.Cluster))
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func (v *volumes) DeleteVolume(ctx context.Context, cluster structs.ClusterID, name string) error {
	b, c, err := v.backend(cluster)
	if err != nil {
		return err
	}
	if err := b.DeleteVolume(ctx, name); err != nil {
		return kubeError(err, fmt.Sprintf("volume %q in cluster %s", name, c))
	}
	return nil
}

// Claims says, per kubernetes cluster, which of names are claims of its
// namespace (Capabilities.Claims): a job's volumes pin it to a cluster
// holding them all, and local clusters hold none.
func (r *router) Claims(names []string) map[structs.ClusterID]map[string]bool {
	if len(r.kube) == 0 {
		return nil // local clusters only: volumes unchecked
	}
	out := make(map[structs.ClusterID]map[string]bool, len(r.kube))
	for c, b := range r.kube {
		out[c] = b.Claims(names)
	}
	return out
}
