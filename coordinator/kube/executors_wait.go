package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A Spark executor Pod that does not fit now (no node its job and its own
// node selector, affinity and tolerations allow, or none with room) stays
// unbound and is tried again. The user finds why where kube-scheduler
// puts it: the Pod's condition PodScheduled False, reason Unschedulable,
// with the message, and a Warning Event FailedScheduling on the Pod
// (`kubectl describe pod`); the server logs it too. Each is written once
// per new reason, not at every try.

// executorWaits tells the user why executor Pod p waits.
func (b *Backend) executorWaits(ctx context.Context, p *corev1.Pod, why string) {
	b.mu.Lock()
	told := b.execWhy[p.UID] == why
	b.execWhy[p.UID] = why
	b.mu.Unlock()
	if told || hasUnschedulable(p, why) {
		return
	}
	b.log.Info("spark executor pod waits", "pod", p.Name, "job", p.Labels[LabelJob], "why", why)
	now := metav1.NewTime(time.Now())
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: why, LastTransitionTime: now}}}})
	if err == nil {
		_, err = b.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if err != nil {
		b.log.Warn("set executor pod's PodScheduled condition", "pod", p.Name, "err", err)
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, now.UnixNano()), Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name,
			UID: p.UID, ResourceVersion: p.ResourceVersion},
		Reason: "FailedScheduling", Message: why, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: b.cfg.SchedulerName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := b.cfg.Client.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		b.log.Warn("record executor pod's FailedScheduling event", "pod", p.Name, "err", err)
	}
}

// forgetWait drops what was told of executor Pod p (bound, or gone).
func (b *Backend) forgetWait(p *corev1.Pod) {
	b.mu.Lock()
	delete(b.execWhy, p.UID)
	b.mu.Unlock()
}

// hasUnschedulable reports whether p's PodScheduled condition already
// says it waits for why (told by an earlier leader).
func hasUnschedulable(p *corev1.Pod, why string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == why
		}
	}
	return false
}
