package kube

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// Storage classes (deploy/storageclasses.yaml): persistent volumes of
// `coordinator volume create` are of VolumeClass, a job's scratch space
// of ScratchClass.
const (
	VolumeClass  = "ceph-rbd"
	ScratchClass = "local-path"
)

// AnnotationSelectedNode is the claim annotation by which kube-scheduler
// tells a WaitForFirstConsumer provisioner the node a claim's Pod runs on.
const AnnotationSelectedNode = "volume.kubernetes.io/selected-node"

// storage is what job j's Pods mount and read their environment from:
//
//   - each of j.Volumes as its PersistentVolumeClaim (volume-N), read-write
//     unless the spec says readOnly;
//   - j.Scratch as a generic ephemeral volume (scratch) of class
//     local-path, made for the Pod and deleted with it; its claim names
//     node as the selected node (AnnotationSelectedNode), as
//     kube-scheduler would: local-path binds WaitForFirstConsumer, and a
//     Pod atom binds itself never passes kube-scheduler, so without it
//     the claim would wait for ever and the Pod with it;
//   - each of j.Configs, a ConfigMap or Secret, as files (config-N,
//     read-only) or as environment variables (envFrom): for an atom
//     config or secret the one of the version t was placed with
//     (configs.go), else the one the job names.
//
// Only names are in the Pod, never values.
func storage(t *structs.Task, j *structs.Job) ([]corev1.Volume, []corev1.VolumeMount, []corev1.EnvFromSource) {
	node := t.Node
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	var envFrom []corev1.EnvFromSource
	for i, v := range j.Volumes {
		name := "volume-" + strconv.Itoa(i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim, ReadOnly: v.ReadOnly}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.MountPath, ReadOnly: v.ReadOnly})
	}
	if sc := j.Scratch; sc != nil {
		class := ScratchClass
		vols = append(vols, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelManaged: "atom", LabelJob: LabelValue(string(j.ID))},
					Annotations: map[string]string{AnnotationSelectedNode: string(node)}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: *resource.NewQuantity(sc.Size, resource.BinarySI)}},
				},
			}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "scratch", MountPath: sc.MountPath})
	}
	for i, c := range j.Configs {
		obj, secret := configSource(t, c)
		if c.Env {
			if secret {
				envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: obj}}})
			} else {
				envFrom = append(envFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: obj}}})
			}
			continue
		}
		name := "config-" + strconv.Itoa(i)
		src := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: obj}}}
		if secret {
			src = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: obj}}
		}
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: c.MountPath, ReadOnly: true})
	}
	return vols, mounts, envFrom
}

// LabelVolume on a PersistentVolumeClaim names the persistent volume of
// `coordinator volume create` it is.
const LabelVolume = "atom.io/volume"

// CreateVolume creates persistent volume name: a PersistentVolumeClaim of
// class VolumeClass, ReadWriteOnce, of size bytes, labelled as atom's and
// owner's, in the backend's namespace.
func (b *Backend) CreateVolume(ctx context.Context, name string, size int64, owner structs.UserID) (*corev1.PersistentVolumeClaim, error) {
	class := VolumeClass
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.cfg.Namespace,
			Labels: map[string]string{LabelManaged: "atom", LabelCluster: LabelValue(string(b.cfg.Cluster)), LabelVolume: LabelValue(name),
				LabelOwner: LabelValue(string(owner))},
			Annotations: map[string]string{LabelOwner: string(owner)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
	return b.cfg.Client.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
}

// Volumes lists the backend's persistent volumes.
func (b *Backend) Volumes(ctx context.Context) ([]corev1.PersistentVolumeClaim, error) {
	list, err := b.cfg.Client.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManaged + "=atom," + LabelCluster + "=" + LabelValue(string(b.cfg.Cluster)) + "," + LabelVolume})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// DeleteVolume deletes persistent volume name's claim.
func (b *Backend) DeleteVolume(ctx context.Context, name string) error {
	return b.cfg.Client.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
}
