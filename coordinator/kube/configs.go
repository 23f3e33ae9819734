package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// atom's configs and secrets in a cluster: each version a task uses is
// one immutable ConfigMap or Secret of the namespace, named from the
// object and the version (ConfigObjectName), made before the first Pod
// that mounts it and labelled as atom's (owned by no other object, so
// nothing a user deletes takes it along). A task's Pod refers to the
// version the task was placed with, so an update never changes a running
// Pod's files. The leader's sweep deletes those no task holding resources
// uses and that are no config's current version: a deleted config's, an
// old version's once its last task has ended.
//
// The coordinator needs create, get, list and delete on configmaps and
// secrets in the namespace (the Role in deploy/namespace-atom-jobs.yaml).
// Values are never logged: events and errors name keys only.

// Labels and annotations of the objects.
const (
	LabelConfig        = "atom.io/config"         // the config's or secret's name
	LabelConfigVersion = "atom.io/config-version" // its version
	AnnotationOwner    = "atom.io/config-owner"   // user:NAME or project:NAME
)

// ConfigObjectName is the ConfigMap's or Secret's name for version of
// atom config id: "atom-config-train-1a2b3c4d5e-v2", the hash telling
// owners apart (names are unique per owner).
func ConfigObjectName(id structs.ConfigID, version int) string {
	sum := sha256.Sum256([]byte(id.Owner))
	return fmt.Sprintf("atom-%s-%s-%s-v%d", id.Kind, id.Name, hex.EncodeToString(sum[:5]), version)
}

// configVersion is the version of ref task t was placed with.
func configVersion(t *structs.Task, ref structs.ConfigRef) int {
	for _, tc := range t.Configs {
		if tc.ConfigID == ref.ID() {
			return tc.Version
		}
	}
	return 0
}

// configObject is what version c of an atom config is in the cluster.
func (b *Backend) configObject(c taskenv.Config) (cm *corev1.ConfigMap, sec *corev1.Secret) {
	id := c.Ref.ID()
	yes := true
	meta := metav1.ObjectMeta{Name: ConfigObjectName(id, c.Version), Namespace: b.cfg.Namespace,
		Labels: map[string]string{LabelManaged: "atom", LabelCluster: LabelValue(string(b.cfg.Cluster)),
			LabelConfig: id.Name, LabelConfigVersion: strconv.Itoa(c.Version)},
		Annotations: map[string]string{AnnotationOwner: string(id.Owner)}}
	if id.Kind == structs.ConfigKindSecret {
		return nil, &corev1.Secret{ObjectMeta: meta, Immutable: &yes, Type: corev1.SecretTypeOpaque, Data: c.Data}
	}
	cm = &corev1.ConfigMap{ObjectMeta: meta, Immutable: &yes}
	for k, v := range c.Data {
		if utf8.Valid(v) {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k] = string(v)
			continue
		}
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[k] = v
	}
	return cm, nil
}

// ensureConfigs makes the ConfigMaps and Secrets of the config versions
// task t uses that this backend has not made yet; one already there (an
// earlier task's, an earlier leader's) is success. Errors name configs,
// never values.
func (b *Backend) ensureConfigs(ctx context.Context, t *structs.Task, j *structs.Job) error {
	if len(t.Configs) == 0 {
		return nil
	}
	if b.cfg.Host == nil {
		return fmt.Errorf("this coordinator cannot give task %s its configs and secrets on cluster %s", t.ID, b.cfg.Cluster)
	}
	cfgs, err := b.cfg.Host.Configs(t, j)
	if err != nil {
		return err
	}
	for _, c := range cfgs {
		cm, sec := b.configObject(c)
		name := ConfigObjectName(c.Ref.ID(), c.Version)
		b.mu.Lock()
		made := b.madeConfigs[name]
		b.mu.Unlock()
		if made {
			continue
		}
		if cm != nil {
			_, err = b.cfg.Client.CoreV1().ConfigMaps(b.cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = b.cfg.Client.CoreV1().Secrets(b.cfg.Namespace).Create(ctx, sec, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			what := map[bool]string{true: "ConfigMap", false: "Secret"}[cm != nil]
			if apierrors.IsForbidden(err) {
				return fmt.Errorf("create %s %s/%s for %s %s: the coordinator may not: grant it configmaps and secrets there (the Role in deploy/namespace-atom-jobs.yaml)",
					what, b.cfg.Namespace, name, c.Ref.Kind(), c.Ref.Name())
			}
			return fmt.Errorf("create %s %s/%s for %s %s: %s", what, b.cfg.Namespace, name, c.Ref.Kind(), c.Ref.Name(), apierrors.ReasonForError(err))
		}
		b.mu.Lock()
		b.madeConfigs[name] = true
		b.configsForbidden = false
		b.mu.Unlock()
	}
	return nil
}

// sweepConfigs deletes atom's ConfigMaps and Secrets of this cluster whose
// names Host.KeepConfigs does not list. A namespace where the
// coordinator may not list them is told once, then left until it makes
// one there.
func (b *Backend) sweepConfigs(ctx context.Context) {
	b.mu.Lock()
	forbidden := b.configsForbidden
	b.mu.Unlock()
	if b.cfg.Host == nil || forbidden {
		return
	}
	sel := metav1.ListOptions{LabelSelector: LabelManaged + "=atom," + LabelCluster + "=" + LabelValue(string(b.cfg.Cluster)) + "," + LabelConfig}
	var names []string
	var secret []bool
	cms, err := b.cfg.Client.CoreV1().ConfigMaps(b.cfg.Namespace).List(ctx, sel)
	if err == nil {
		for _, o := range cms.Items {
			names, secret = append(names, o.Name), append(secret, false)
		}
		var secs *corev1.SecretList
		if secs, err = b.cfg.Client.CoreV1().Secrets(b.cfg.Namespace).List(ctx, sel); err == nil {
			for _, o := range secs.Items {
				names, secret = append(names, o.Name), append(secret, true)
			}
		}
	}
	if apierrors.IsForbidden(err) {
		b.mu.Lock()
		b.configsForbidden = true
		b.mu.Unlock()
		b.log.Info("not sweeping atom's ConfigMaps and Secrets: the coordinator may not list them in this namespace (the Role in deploy/namespace-atom-jobs.yaml grants it)", "namespace", b.cfg.Namespace)
		return
	}
	if err != nil {
		b.log.Warn("list atom's ConfigMaps and Secrets", "namespace", b.cfg.Namespace, "err", apierrors.ReasonForError(err))
		return
	}
	// What to keep is read after the list: an object made since for a
	// task placed since is not in the list.
	keep := b.cfg.Host.KeepConfigs()
	for i, name := range names {
		if keep[name] {
			continue
		}
		if secret[i] {
			err = b.cfg.Client.CoreV1().Secrets(b.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		} else {
			err = b.cfg.Client.CoreV1().ConfigMaps(b.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			b.log.Warn("delete an unused config object", "name", name, "err", apierrors.ReasonForError(err))
			continue
		}
		b.mu.Lock()
		delete(b.madeConfigs, name)
		b.mu.Unlock()
	}
}

// configSource is where ref's keys come from in t's Pod: the version's
// object for atom's configs and secrets, the named one for a ConfigMap or
// Secret of the namespace.
func configSource(t *structs.Task, ref structs.ConfigRef) (name string, secret bool) {
	if ref.Object() {
		return ConfigObjectName(ref.ID(), configVersion(t, ref)), ref.Kind() == structs.ConfigKindSecret
	}
	return ref.Name(), ref.Secret != ""
}
