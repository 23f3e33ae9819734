package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestVolumesPinCluster: two API servers; a job's volume pins it to the
// cluster holding the claim, although the other has more free GPUs; a
// normal job waiting for the volume a low job writes preempts that job
// (its Pod deleted, the normal one's bound in its place); a job whose
// claim no cluster holds waits, saying so, until `coordinator volume
// create` makes it in the other cluster, where it then runs.
func TestVolumesPinCluster(t *testing.T) {
	a, b := k8stest.StartTwo(t, k8stest.Options{})
	prepare(t, a)
	prepare(t, b)
	a.AddNodes(t, k8stest.NodeSpec{Name: "a-gpu-1", GPUs: 8, GPUModel: "A100"})
	b.AddNodes(t,
		k8stest.NodeSpec{Name: "b-gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "b-gpu-2", GPUs: 8, GPUModel: "A100"},
	)
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"a": a, "b": b})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	assert.Equal(t, "volume imagenet created in cluster a: 1Gi of class ceph-rbd\n",
		co.cli(t, "volume", "create", "imagenet", "--size", "1Gi", "--cluster", "a"))

	// A low job writing imagenet: on a, where the claim is.
	prep := co.submit(t, "kind: command\nname: prep\npriority: low\ncommand: [sleep, inf]\n"+
		"resources: {accelerators: {type: A100, count: 4}}\nvolumes: [{name: data, claim: imagenet, mountPath: /data}]\n")
	_, prepTasks := co.waitJob(t, prep, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, prepTasks, 1)
	assert.Equal(t, structs.NodeID("a-gpu-1"), prepTasks[0].Node)
	onA := pods(t, a, prep)
	require.Len(t, onA, 1)
	assert.Equal(t, "imagenet", onA[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Empty(t, pods(t, b, prep))

	// A normal job writing it: a1 has room, but prep writes imagenet, so
	// prep is preempted; train runs on a1, prep waits for the volume.
	train := co.submit(t, "kind: command\nname: train\ncommand: [python, train.py]\n"+
		"resources: {accelerators: {type: A100, count: 4}}\nvolumes: [{name: data, claim: imagenet, mountPath: /data}]\n")
	_, tasks := co.waitJob(t, train, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, tasks, 1)
	assert.Equal(t, structs.NodeID("a-gpu-1"), tasks[0].Node)
	got := pods(t, a, train)
	require.Len(t, got, 1)
	assert.Equal(t, corev1.PodRunning, got[0].Status.Phase)
	assert.Empty(t, pods(t, b, train))
	_, err := a.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(prepTasks[0].ID), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "prep's Pod is deleted: %v", err)
	j, _ := co.waitJob(t, prep, "is requeued", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobPending })
	assert.Equal(t, structs.ReasonPreempted, j.Reason)
	require.Eventually(t, func() bool {
		w, err := co.Why(ctx, prep)
		return err == nil && w.Message == "waits for volume imagenet: job "+string(train)+" mounts it read-write (one job at a time)"
	}, 20*time.Second, 50*time.Millisecond, "prep waits for train's volume")

	// No cluster has coco: the job waits and says which clusters were
	// checked and how to make it.
	eval := co.submit(t, "kind: command\nname: eval\ncommand: [python, eval.py]\n"+
		"resources: {accelerators: {type: A100, count: 1}}\nvolumes: [{name: data, claim: coco, mountPath: /data, readOnly: true}]\n")
	require.Eventually(t, func() bool {
		w, err := co.Why(ctx, eval)
		return err == nil && w.Message == "waits for volume coco: no cluster has it (checked a, b); create it with coordinator volume create coco --size SIZE --cluster CLUSTER"
	}, 20*time.Second, 50*time.Millisecond, "eval waits for its claim")
	assert.Empty(t, pods(t, a, eval))
	assert.Empty(t, pods(t, b, eval))

	// Made in b: eval runs there, its Pod mounting it read-only.
	co.cli(t, "volume", "create", "coco", "--size", "1Gi", "--cluster", "b")
	_, tasks = co.waitJob(t, eval, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, tasks, 1)
	onB := pods(t, b, eval)
	require.Len(t, onB, 1)
	assert.Equal(t, "b", onB[0].Labels["atom.io/cluster"])
	require.NotNil(t, onB[0].Spec.Volumes[0].PersistentVolumeClaim)
	assert.Equal(t, corev1.PersistentVolumeClaimVolumeSource{ClaimName: "coco", ReadOnly: true}, *onB[0].Spec.Volumes[0].PersistentVolumeClaim)
	assert.Empty(t, pods(t, a, eval))
}
