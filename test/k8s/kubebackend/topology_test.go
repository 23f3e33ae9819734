package kubebackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestTopology: kwok Nodes labelled with topology.kubernetes.io/zone and
// rack, the cluster given those levels (cluster set, as an admin does),
// an MPI gang that requires a rack and a Spark job that requires a zone.
// Every Pod is bound in one domain: the gangs in the rack that fits them
// most tightly, the Spark driver with its executors, and an executor
// Spark adds beyond the zone's room waits (Unschedulable, naming the
// zone), though the other zone has room.
func TestTopology(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	const zone = "topology.kubernetes.io/zone"
	at := func(z, rack string) map[string]string { return map[string]string{zone: z, "rack": rack} }
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "g1", GPUs: 8, GPUModel: "A100", Labels: at("z1", "r1")},
		k8stest.NodeSpec{Name: "g2", GPUs: 8, GPUModel: "A100", Labels: at("z1", "r1")},
		k8stest.NodeSpec{Name: "g3", GPUs: 8, GPUModel: "A100", Labels: at("z2", "r2")},
		k8stest.NodeSpec{Name: "g4", GPUs: 8, GPUModel: "A100", Labels: at("z2", "r2")},
		k8stest.NodeSpec{Name: "g5", GPUs: 8, GPUModel: "A100", Labels: at("z2", "r2")},
		k8stest.NodeSpec{Name: "c1", CPU: "16", Memory: "64Gi", Labels: at("z1", "r1")},
		k8stest.NodeSpec{Name: "c2", CPU: "16", Memory: "64Gi", Labels: at("z2", "r2")},
	)
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx := context.Background()
	spec := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: k8s\nbackend: kubernetes\nkubeconfig: "+c.CoordinatorKubeconfig+
		"\nnamespace: "+ns+"\ntopology: {levels: ["+zone+", rack]}\n"), 0o600))
	co.cli(t, "cluster", "set", "-f", spec)
	assert.Contains(t, co.cli(t, "node", "list"), "zone=z2,rack=r2")

	// nodesOf waits until job id runs and returns its Pods' nodes.
	nodesOf := func(id structs.JobID, n int) []string {
		t.Helper()
		co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
		var out []string
		for _, p := range pods(t, c, id) {
			if p.Labels["spark-role"] != "executor" {
				out = append(out, p.Spec.NodeName)
			}
		}
		require.Len(t, out, n)
		return out
	}
	gang := "kind: mpi\nname: %s\nimage: atom/openmpi:test\ncommand: [./train]\nreplicas: %d\nresources: {accelerators: {type: A100, count: 8}}\ntopology: {required: rack}\n"
	a := co.submit(t, fmt.Sprintf(gang, "two", 2))
	assert.ElementsMatch(t, []string{"g1", "g2"}, nodesOf(a, 2), "rack r1 holds 2 exactly")
	b := co.submit(t, fmt.Sprintf(gang, "three", 3))
	assert.ElementsMatch(t, []string{"g3", "g4", "g5"}, nodesOf(b, 3))

	// The Spark job: a 2-CPU driver and 1 executor of 4 CPUs in zone z1
	// (c1; the first of two that fit alike), up to 4 executors.
	s := co.submit(t, sparkExec("zonal", "normal", "", "  dynamicAllocation: {minExecutors: 1, maxExecutors: 4}\n")+"topology: {required: zone}\n")
	assert.Equal(t, []string{"c1"}, nodesOf(s, 1))
	d := driverPod(t, c, s)
	for _, name := range []string{"zonal-exec-1", "zonal-exec-2", "zonal-exec-3"} {
		executor(t, c, s, d, name)
		assert.Equal(t, "c1", boundTo(t, c, name), name)
	}
	// c1 has 2 CPUs left: the fourth waits, though c2 is empty.
	executor(t, c, s, d, "zonal-exec-4")
	require.Eventually(t, func() bool {
		p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, "zonal-exec-4", metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != "" {
			return false
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodScheduled && cd.Reason == corev1.PodReasonUnschedulable && strings.Contains(cd.Message, "zone z1") {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the fourth executor waits for room in zone z1")
	for _, p := range executors(t, c, s) {
		if p.Spec.NodeName != "" {
			assert.Equal(t, "c1", p.Spec.NodeName, p.Name)
		}
	}
}
