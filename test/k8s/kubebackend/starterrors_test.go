package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestStartErrors: a backend whose informers cannot list says why and what
// to do, not "informers did not sync: context deadline exceeded": the
// coordinator's identity without deploy/rbac.yaml (forbidden), a token the
// API server does not know (unauthorized), an API server not there
// (connection refused); and one whose namespace is not there.
func TestStartErrors(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	newBackend := func(rc *rest.Config) error {
		t.Helper()
		client, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		b, err := kube.New(ctx, kube.Config{Cluster: "k8s", Client: client, Namespace: ns}, &recorder{})
		if b != nil {
			b.Close()
		}
		require.Error(t, err)
		return err
	}

	// No RBAC applied: the service account may list nothing.
	err := newBackend(c.CoordinatorConfig)
	require.Regexp(t, `^kube backend k8s: cannot list (nodes, )?(persistentvolumeclaims in namespace atom-jobs, )?(pods)?: `, err.Error())
	require.Contains(t, err.Error(), `is forbidden: User "system:serviceaccount:atom:atom-coordinator" cannot list resource`)
	require.Contains(t, err.Error(), "the coordinator's identity lacks permissions: apply deploy/rbac.yaml (ClusterRole atom-coordinator) and bind it")
	require.NotContains(t, err.Error(), "deadline exceeded")

	err = newBackend(c.Config("not-a-token-the-api-server-knows"))
	require.Contains(t, err.Error(), "Unauthorized")
	require.Contains(t, err.Error(), "the API server refused the coordinator's credentials: check the user (token or client certificate) of the cluster's kubeconfig")

	// A namespace that is not there (informers list it as empty).
	c.ApplyFile(t, repoFile(t, "deploy/rbac.yaml"))
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "RBAC takes effect")
	require.EqualError(t, newBackend(c.CoordinatorConfig), "kube backend k8s: namespace atom-jobs does not exist: create it (deploy/namespace-atom-jobs.yaml makes atom-jobs) or name an existing one as the cluster's namespace in the cluster config")

	gone := rest.CopyConfig(c.AdminConfig)
	gone.Host = "https://127.0.0.1:1"
	err = newBackend(gone)
	require.Contains(t, err.Error(), "connection refused")
	require.Contains(t, err.Error(), "the API server cannot be reached: check the server address of the cluster's kubeconfig and that the API server runs")
}
