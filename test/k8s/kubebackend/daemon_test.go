package kubebackend_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

const adminToken = "admin-token-0123456789"

// TestCoordinatorDrivesKubernetes: a coordinator server with one cluster
// of backend kubernetes takes its nodes from the Node objects, runs a
// submitted 2 × 8-GPU job as two Pods on two GPU nodes, sees them Running
// and, on cancel, deletes them.
func TestCoordinatorDrivesKubernetes(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	c.ApplyFile(t, repoFile(t, "deploy/rbac.yaml"))
	c.ApplyFile(t, repoFile(t, "deploy/priorityclasses.yaml"))
	c.CreateNamespace(t, ns)
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-2", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "cpu-1"},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	quota, err := structs.ParseQuotaSpec([]byte("scope: user:dev\nlimits: {gpu/A100: 64, cpu: 1000, memory: 100Ti}\n"))
	require.NoError(t, err)
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tf, KubeImage: "atom/cpu:test", KubeHeartbeatPods: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cluster: &structs.ClusterConfig{Clusters: []structs.Cluster{{Name: "k8s", Backend: "kubernetes",
			Kubeconfig: c.CoordinatorKubeconfig, Namespace: ns}}, Quotas: []structs.Quota{*quota}}}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	cl := client.New(d.URL, adminToken)

	require.Eventually(t, func() bool {
		nodes, err := cl.Nodes(ctx)
		return err == nil && len(nodes) == 3
	}, 20*time.Second, 50*time.Millisecond, "the coordinator has the cluster's three nodes")

	spec := []byte("kind: command\nname: train\ncommand: [python, train.py]\nreplicas: 2\nresources: {accelerators: {type: A100, count: 8}}\n")
	r, err := cl.SubmitJob(ctx, spec, "req-k8s-1")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := cl.Job(ctx, r.JobID)
		return err == nil && st.Job.State == structs.JobRunning
	}, 30*time.Second, 50*time.Millisecond, "the job runs")
	st, err := cl.Job(ctx, r.JobID)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 2)
	nodes := map[string]bool{}
	for _, task := range st.Tasks {
		p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(task.ID), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodRunning, p.Status.Phase)
		assert.Equal(t, string(task.Node), p.Spec.NodeName)
		assert.Equal(t, "atom-normal", p.Spec.PriorityClassName)
		assert.Equal(t, "atom/cpu:test", p.Spec.Containers[0].Image)
		assert.Equal(t, []string{"run", "--grace", "2s", "--", "python", "train.py"}, p.Spec.Containers[0].Args)
		gpus := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		assert.EqualValues(t, 8, gpus.Value())
		assert.Equal(t, string(r.JobID), p.Annotations["atom.io/job"])
		nodes[p.Spec.NodeName] = true
	}
	assert.Len(t, nodes, 2)

	// Running throughout several heartbeat TTLs (the backend heartbeats
	// for kwok's Pods): never declared lost.
	require.Never(t, func() bool {
		st, err := cl.Job(ctx, r.JobID)
		return err != nil || st.Job.State != structs.JobRunning
	}, 4*time.Second, 100*time.Millisecond, "the job stays Running past the heartbeat TTL")

	_, err = cl.CancelJob(ctx, r.JobID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		list, err := c.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	}, 30*time.Second, 50*time.Millisecond, "cancel deletes the Pods")
	require.Eventually(t, func() bool {
		st, err := cl.Job(ctx, r.JobID)
		return err == nil && st.Job.State.Ended()
	}, 30*time.Second, 50*time.Millisecond, "the job ends")
}
