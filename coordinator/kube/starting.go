package kube

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// cannotStart are the reasons of a waiting container that no wait
// mends: the Pod would stay Pending for ever.
var cannotStart = map[string]bool{"InvalidImageName": true, "ErrImageNeverPull": true, "CreateContainerConfigError": true}

// beatStarting heartbeats, on the leader, every task whose Pod is bound
// and still Pending: the kubelet is pulling its image (minutes for a CUDA
// image on a node that has not got it) or setting up its volumes, and
// atom in it cannot heartbeat before it runs, so without this the task
// was lost after the heartbeat TTL and its Pod deleted. A Pod whose
// container cannot start (an image name the kubelet refuses, a config
// naming a Secret or ConfigMap key that is not there) is reported Lost
// saying why, once.
func (b *Backend) beatStarting() {
	for _, o := range b.pods.List() {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		id := structs.TaskID(p.Annotations[LabelTask])
		if id == "" || !b.current(id, p) {
			continue
		}
		b.mu.Lock()
		stopped := b.stopped[id]
		b.mu.Unlock()
		if stopped {
			continue
		}
		if why := startBlocked(p); why != "" {
			b.note(id, p, structs.TaskEvent{State: structs.TaskLost,
				Message: fmt.Sprintf("pod %s/%s cannot start: %s", p.Namespace, p.Name, why)}, true, false)
			continue
		}
		if why, since := b.pullFailing(p); why != "" && b.cfg.Now().Sub(since) >= b.cfg.ImagePullGrace {
			b.note(id, p, structs.TaskEvent{State: structs.TaskLost,
				Message: fmt.Sprintf("pod %s/%s has not pulled its image for %s: %s", p.Namespace, p.Name, b.cfg.ImagePullGrace, why)}, true, false)
			continue
		}
		if err := b.report(id, structs.TaskEvent{}); err != nil {
			b.log.Debug("heartbeat of a starting pod failed", "task", id, "err", err)
		}
	}
}

// pullFailing says why Pod p's image pull fails (ErrImagePull,
// ImagePullBackOff: an image or tag that is not there, a registry that
// refuses) and since when this backend has seen it fail; "" once it does
// not (then it is forgotten).
func (b *Backend) pullFailing(p *corev1.Pod) (string, time.Time) {
	why := ""
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
			why = w.Reason
			if w.Message != "" {
				why += ": " + w.Message
			}
			break
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if why == "" {
		delete(b.pullSince, p.UID)
		return "", time.Time{}
	}
	since, ok := b.pullSince[p.UID]
	if !ok {
		since = b.cfg.Now()
		b.pullSince[p.UID] = since
	}
	return why, since
}

// startBlocked says why Pod p's containers cannot start, if one waits
// for a reason in cannotStart.
func startBlocked(p *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && cannotStart[w.Reason] {
			if w.Message == "" {
				return w.Reason
			}
			return w.Reason + ": " + w.Message
		}
	}
	return ""
}
