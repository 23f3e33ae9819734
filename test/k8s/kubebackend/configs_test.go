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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/keyring/keyringtest"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// TestConfigsAndSecrets: a config and a secret made with the CLI become
// an immutable ConfigMap and Secret of the jobs' namespace, labelled as
// atom's, before the service's Pods that mount them; an update and a
// service restart make the next version's ConfigMap, the Pods placed
// again mount it, and the old one goes once no task uses it; deleting
// the config and the secret deletes their objects. The secret's value is
// in no Pod, job status or coordinator log line.
func TestConfigsAndSecrets(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, nodetest.ConfigsRBAC(ctx, c))
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1"}, k8stest.NodeSpec{Name: "cpu-2"})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})

	const value = "wandb-key-0123456789abcdef-never-printed"
	co.cli(t, "config", "create", "train", "--from-literal", "lr=0.1", "--from-literal", "mode=fast")
	co.cli(t, "secret", "create", "wandb", "--from-literal", "WANDB_API_KEY="+value)
	train := structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: "user:dev", Name: "train"}
	wandb := structs.ConfigID{Kind: structs.ConfigKindSecret, Owner: "user:dev", Name: "wandb"}
	id := co.submit(t, `kind: service
name: web
replicas: 2
minAvailable: 1
command: [serve]
resources: {cpu: "1", memory: 1Gi}
configs: [{config: train, mountPath: /etc/train}, {secret: wandb, env: true}]
`)
	// pods waits until both replicas run with version v of train and
	// returns their Pods.
	pods := func(v int) []*corev1.Pod {
		t.Helper()
		_, tasks := co.waitJob(t, id, "two replicas with the config's version", func(_ *structs.Job, tasks []*structs.Task) bool {
			n := 0
			for _, tk := range running(tasks) {
				if len(tk.Configs) == 2 && tk.Configs[0].Version == v {
					n++
				}
			}
			return n == 2 && len(running(tasks)) == 2
		})
		var out []*corev1.Pod
		for _, tk := range running(tasks) {
			p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(tk.ID), metav1.GetOptions{})
			require.NoError(t, err)
			out = append(out, p)
		}
		return out
	}
	cm1, sec1 := kube.ConfigObjectName(train, 1), kube.ConfigObjectName(wandb, 1)
	for _, p := range pods(1) {
		assert.Equal(t, cm1, configVolume(t, p).Name)
		require.Len(t, p.Spec.Containers[0].EnvFrom, 1)
		assert.Equal(t, sec1, p.Spec.Containers[0].EnvFrom[0].SecretRef.Name)
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		assert.False(t, keyringtest.Leaks(raw, value), "the Pod names the Secret only")
	}
	cm, err := c.Admin.CoreV1().ConfigMaps(ns).Get(ctx, cm1, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"lr": "0.1", "mode": "fast"}, cm.Data)
	assert.True(t, *cm.Immutable)
	assert.Equal(t, "atom", cm.Labels[kube.LabelManaged])
	assert.Equal(t, "user:dev", cm.Annotations[kube.AnnotationOwner])
	assert.Empty(t, cm.OwnerReferences)
	sec, err := c.Admin.CoreV1().Secrets(ns).Get(ctx, sec1, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"WANDB_API_KEY": []byte(value)}, sec.Data)
	assert.True(t, *sec.Immutable)

	co.cli(t, "config", "update", "train", "--from-literal", "lr=0.2")
	co.cli(t, "service", "restart", string(id))
	cm2 := kube.ConfigObjectName(train, 2)
	for _, p := range pods(2) {
		assert.Equal(t, cm2, configVolume(t, p).Name)
		assert.Equal(t, sec1, p.Spec.Containers[0].EnvFrom[0].SecretRef.Name, "the secret did not change")
	}
	cm, err = c.Admin.CoreV1().ConfigMaps(ns).Get(ctx, cm2, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"lr": "0.2"}, cm.Data)
	gone := func(get func() error, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return apierrors.IsNotFound(get()) }, 30*time.Second, 50*time.Millisecond, "%s deleted", what)
	}
	gone(func() error { _, err := c.Admin.CoreV1().ConfigMaps(ns).Get(ctx, cm1, metav1.GetOptions{}); return err }, "version 1, once no task uses it")

	_, err = co.run(t, "secret", "delete", "wandb")
	assert.ErrorContains(t, err, "secret wandb is in use by job "+string(id))
	co.cli(t, "job", "cancel", string(id))
	co.waitJob(t, id, "its tasks end", func(j *structs.Job, tasks []*structs.Task) bool {
		for _, tk := range tasks {
			if tk.State.HoldsResources() {
				return false
			}
		}
		return true
	})
	co.cli(t, "config", "delete", "train")
	co.cli(t, "secret", "delete", "wandb")
	gone(func() error { _, err := c.Admin.CoreV1().ConfigMaps(ns).Get(ctx, cm2, metav1.GetOptions{}); return err }, "the config's ConfigMap")
	gone(func() error { _, err := c.Admin.CoreV1().Secrets(ns).Get(ctx, sec1, metav1.GetOptions{}); return err }, "the secret's Secret")

	st, err := co.Job(ctx, id)
	require.NoError(t, err)
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	assert.False(t, keyringtest.Leaks(raw, value))
	assert.False(t, keyringtest.Leaks([]byte(co.log.String()), value), "the coordinator's log")
}

// configVolume is Pod p's volume of its first config.
func configVolume(t *testing.T, p *corev1.Pod) *corev1.ConfigMapVolumeSource {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if v.Name == "config-0" {
			require.NotNil(t, v.ConfigMap)
			return v.ConfigMap
		}
	}
	require.Fail(t, "no volume config-0", "pod %s", p.Name)
	return nil
}
