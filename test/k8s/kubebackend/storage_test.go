package kubebackend_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestStorage: a job's volume claim, scratch space, ConfigMap and Secret
// reach its Pod on a real API server as references only: the Secret's
// value is in no Pod, job status or log line.
func TestStorage(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const secretValue = "wandb-0123456789abcdef-do-not-print"
	_, err := c.Admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wandb", Namespace: ns},
		StringData: map[string]string{"WANDB_API_KEY": secretValue}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "train-config", Namespace: ns},
		Data: map[string]string{"config.yaml": "lr: 0.1\n"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})

	// coordinator volume create: a PersistentVolumeClaim of class
	// ceph-rbd, ReadWriteOnce, of the size asked.
	assert.Equal(t, "volume imagenet created in cluster k8s: 100Gi of class ceph-rbd\n",
		co.cli(t, "volume", "create", "imagenet", "--size", "100Gi"))
	pvc, err := c.Admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "imagenet", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, kube.VolumeClass, *pvc.Spec.StorageClassName)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	assert.True(t, resource.MustParse("100Gi").Equal(pvc.Spec.Resources.Requests[corev1.ResourceStorage]))
	_, err = co.run(t, "volume", "create", "imagenet", "--size", "1Gi")
	assert.EqualError(t, err, `volume "imagenet" in cluster k8s already exists`)
	_, err = co.run(t, "volume", "create", "scratch", "--size", "0")
	assert.EqualError(t, err, `volume size "0" is not allowed: use a quantity above 0 such as 100Gi`)
	for _, size := range []string{"1.5", "100", "1023Ki", "0.5Mi"} { // bytes, not Gi: Kubernetes made "1.5" a volume of 2 bytes
		_, err = co.run(t, "volume", "create", "scratch", "--size", size)
		assert.EqualError(t, err, `volume size "`+size+`" is not allowed: a size without a unit is in bytes; use at least 1Mi in whole bytes, such as 100Gi`)
	}
	_, err = c.Admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "scratch", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no claim made: %v", err)
	_, err = co.run(t, "volume", "create", "scratch", "--size", "1Gi", "--cluster", "elsewhere")
	assert.EqualError(t, err, `cluster "elsewhere" is not a kubernetes cluster: use one of k8s`)
	id := co.submit(t, `kind: command
name: train
command: [python, train.py]
resources: {accelerators: {type: A100, count: 8}}
volumes: [{name: data, claim: imagenet, mountPath: /data}]
scratch: {size: 200Gi}
configs:
  - {configMap: train-config, mountPath: /etc/train}
  - {secret: wandb, env: true}
`)
	_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(tasks[0].ID), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)

	vols := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		vols[v.Name] = v
	}
	require.NotNil(t, vols["volume-0"].PersistentVolumeClaim)
	assert.Equal(t, "imagenet", vols["volume-0"].PersistentVolumeClaim.ClaimName)
	assert.False(t, vols["volume-0"].PersistentVolumeClaim.ReadOnly)
	eph := vols["scratch"].Ephemeral
	require.NotNil(t, eph)
	require.NotNil(t, eph.VolumeClaimTemplate)
	assert.Equal(t, "local-path", *eph.VolumeClaimTemplate.Spec.StorageClassName)
	// local-path binds WaitForFirstConsumer, which only a scheduler's
	// selected node starts; the Pod never passes kube-scheduler, so the
	// claim names its node as kube-scheduler would (else it never binds).
	assert.Equal(t, map[string]string{kube.AnnotationSelectedNode: "gpu-1"}, eph.VolumeClaimTemplate.Annotations)
	assert.True(t, resource.MustParse("200Gi").Equal(eph.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage]))
	require.NotNil(t, vols["config-0"].ConfigMap)
	assert.Equal(t, "train-config", vols["config-0"].ConfigMap.Name)

	ct := p.Spec.Containers[0]
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ct.VolumeMounts {
		mounts[m.MountPath] = m
	}
	assert.Equal(t, corev1.VolumeMount{Name: "volume-0", MountPath: "/data"}, mounts["/data"])
	assert.Equal(t, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"}, mounts["/scratch"])
	assert.Equal(t, corev1.VolumeMount{Name: "config-0", MountPath: "/etc/train", ReadOnly: true}, mounts["/etc/train"])
	require.Len(t, ct.EnvFrom, 1)
	require.NotNil(t, ct.EnvFrom[0].SecretRef)
	assert.Equal(t, "wandb", ct.EnvFrom[0].SecretRef.Name)

	// The Secret's value: never in the Pod, the job's status or a log.
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secretValue)
	st, err := co.Job(ctx, id)
	require.NoError(t, err)
	raw, err = json.Marshal(st)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secretValue)
	assert.Contains(t, string(raw), `"secret":"wandb"`, "the job names the Secret")
	// In use: listed with its job, not deleted.
	assert.Regexp(t, `NAME\s+CLUSTER\s+SIZE\s+CLASS\s+PHASE\s+OWNER\s+USED BY\nimagenet\s+k8s\s+100Gi\s+ceph-rbd\s+Pending\s+dev\s+`+string(id)+`\n`,
		co.cli(t, "volume", "list"))
	_, err = co.run(t, "volume", "delete", "imagenet")
	assert.EqualError(t, err, `volume "imagenet" is in use by job `+string(id)+`: cancel it or wait for it to end`)

	// A second job that writes it waits, and says why, until the first ends.
	second := co.submit(t, "kind: command\nname: eval\ncommand: [python, eval.py]\nresources: {accelerators: {type: A100, count: 1}}\n"+
		"volumes: [{name: data, claim: imagenet, mountPath: /data}]\n")
	require.Eventually(t, func() bool {
		w, err := co.Why(ctx, second)
		return err == nil && w.Message == "waits for volume imagenet: job "+string(id)+" mounts it read-write (one job at a time)"
	}, 20*time.Second, 50*time.Millisecond, "the second writer waits for the first")
	assert.Empty(t, pods(t, c, second))

	_, err = co.CancelJob(ctx, id)
	require.NoError(t, err)
	co.waitJob(t, id, "ends", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
	co.waitJob(t, second, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	_, err = co.CancelJob(ctx, second)
	require.NoError(t, err)
	co.waitJob(t, second, "ends", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
	assert.Equal(t, "volume imagenet deleted\n", co.cli(t, "volume", "delete", "imagenet"))
	// Deleted: Kubernetes' pvc-protection finalizer keeps the claim
	// until a controller-manager (none runs here) sees no Pod uses it.
	assert.Regexp(t, `\nimagenet\s+k8s\s+100Gi\s+ceph-rbd\s+Terminating\s+dev\s+-\n$`, co.cli(t, "volume", "list"))
	pvc, err = c.Admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "imagenet", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, pvc.DeletionTimestamp)
	assert.NotEmpty(t, co.log.String())
	assert.NotContains(t, co.log.String(), secretValue)
}
