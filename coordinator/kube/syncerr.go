package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// listErrors keeps the last error each of the backend's informers met
// listing or watching, so that a backend whose informers never sync says
// why (the API server refused the coordinator, or cannot be reached) and
// what to do, instead of "context deadline exceeded". Each new error is
// logged once as it comes, in place of client-go's own klog lines.
type listErrors struct {
	mu   sync.Mutex
	last map[string]error // informer → its last error; nil once it synced
}

// watch has informer inf, named what ("persistentvolumeclaims in namespace atom-jobs"),
// report its list and watch errors to l. Call it before the informer
// starts.
func (b *Backend) watchErrors(what string, inf cache.SharedIndexInformer) {
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		b.listErrs.mu.Lock()
		prev := b.listErrs.last[what]
		if b.listErrs.last == nil {
			b.listErrs.last = map[string]error{}
		}
		b.listErrs.last[what] = err
		b.listErrs.mu.Unlock()
		if prev == nil || prev.Error() != err.Error() {
			b.log.Warn("kubernetes list or watch failed", "of", what, "err", err, "hint", listHint(err))
		}
	})
}

// syncError says why the informers named in pending did not sync before
// ctx ended: the last error each met, with what to do about it.
func (b *Backend) syncError(ctx context.Context, pending []string) error {
	b.listErrs.mu.Lock()
	defer b.listErrs.mu.Unlock()
	sort.Strings(pending)
	var failed []string
	var first error
	for _, what := range pending {
		if err := b.listErrs.last[what]; err != nil {
			failed = append(failed, what)
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		// client-go retries a watch refused a connection without telling
		// (the first list is a watch): ask once more, by hand.
		if what, err := b.probe(); err != nil {
			failed, first = []string{what}, err
		}
	}
	if first == nil {
		return fmt.Errorf("kube backend %s: %s did not sync: %w", b.cfg.Cluster, strings.Join(pending, ", "), ctx.Err())
	}
	return fmt.Errorf("kube backend %s: cannot list %s: %v: %s", b.cfg.Cluster, strings.Join(failed, ", "), first, listHint(first))
}

// probe lists one of each kind the informers follow, for the first error.
func (b *Backend) probe() (what string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	one := metav1.ListOptions{Limit: 1}
	core := b.cfg.Client.CoreV1()
	if _, err := core.Nodes().List(ctx, one); err != nil {
		return "nodes", err
	}
	if _, err := core.Pods("").List(ctx, one); err != nil {
		return "pods", err
	}
	if _, err := core.PersistentVolumeClaims(b.cfg.Namespace).List(ctx, one); err != nil {
		return "persistentvolumeclaims in namespace " + b.cfg.Namespace, err
	}
	return "", nil
}

// listHint says what to do about err, an informer's list or watch error.
func listHint(err error) string {
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err):
		return "the coordinator's identity lacks permissions: apply deploy/rbac.yaml (ClusterRole atom-coordinator) and bind it to the user of the cluster's kubeconfig, or to its service account in the cluster"
	case apierrors.IsUnauthorized(err):
		return "the API server refused the coordinator's credentials: check the user (token or client certificate) of the cluster's kubeconfig"
	case errors.As(err, &netErr), strings.Contains(err.Error(), "connection refused"), strings.Contains(err.Error(), "no such host"):
		return "the API server cannot be reached: check the server address of the cluster's kubeconfig and that the API server runs"
	}
	return "check the cluster's kubeconfig and the API server"
}
