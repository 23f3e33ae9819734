package kubebackend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestNodeNamesAcrossClusters: two clusters each get a Node named
// shared-1. The second is not taken: cluster a keeps its node (it was
// overwritten by b's, and b's deletion removed a's), the leader says why
// once, though kwok updates the Node's status every few seconds; b's
// Node deleted leaves a's; a's deleted, the node goes.
func TestNodeNamesAcrossClusters(t *testing.T) {
	a, b := k8stest.StartTwo(t, k8stest.Options{})
	prepare(t, a)
	prepare(t, b)
	a.AddNodes(t, k8stest.NodeSpec{Name: "a-cpu-1", CPU: "16", Memory: "64Gi"})
	b.AddNodes(t, k8stest.NodeSpec{Name: "b-cpu-1", CPU: "16", Memory: "64Gi"})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"a": a, "b": b})
	ctx := context.Background()
	node := func() *structs.Node {
		ns, err := co.Nodes(ctx)
		require.NoError(t, err)
		for _, n := range ns {
			if n.Name == "shared-1" {
				return &n.Node
			}
		}
		return nil
	}

	a.AddNodes(t, k8stest.NodeSpec{Name: "shared-1", CPU: "16", Memory: "64Gi"})
	require.Eventually(t, func() bool { n := node(); return n != nil && n.Cluster == "a" }, 30*time.Second, 50*time.Millisecond)
	b.AddNodes(t, k8stest.NodeSpec{Name: "shared-1", CPU: "96", Memory: "512Gi"})
	const refused = `msg="node upsert failed" cluster=b node=shared-1 err="node shared-1: a node of that name is in cluster a, not b: node names must be unique across clusters`
	require.Eventually(t, func() bool { return strings.Contains(co.log.String(), refused) }, 30*time.Second, 50*time.Millisecond)
	n := node()
	require.NotNil(t, n)
	assert.Equal(t, structs.ClusterID("a"), n.Cluster)
	assert.Equal(t, int64(16000), n.Capacity.MilliCPU, "a's node, not b's")

	// b's Node goes: a's node stays.
	require.NoError(t, b.Admin.CoreV1().Nodes().Delete(ctx, "shared-1", metav1.DeleteOptions{}))
	// a's Node changes meanwhile (a label): the state follows a.
	_, err := a.Admin.CoreV1().Nodes().Patch(ctx, "shared-1", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"seen":"after"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { n := node(); return n != nil && n.Tags["seen"] == "after" }, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, structs.ClusterID("a"), node().Cluster)
	assert.Equal(t, 1, strings.Count(co.log.String(), refused), "said once")

	require.NoError(t, a.Admin.CoreV1().Nodes().Delete(ctx, "shared-1", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return node() == nil }, 30*time.Second, 50*time.Millisecond)
}
