package kube

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// admissionRetry is how long a task's Pod that its node's kubelet refuses
// at admission is made again before its task is lost saying why.
// The kubelet admits a Pod by the Pods it still runs: a task placed where
// one has just ended (atom reports its exit, and the coordinator frees its
// resources, just before the container exits) may find the old container
// still there for a moment, and its Pod refused with OutOfcpu.
const admissionRetry = 30 * time.Second

// admissionBackoff is the wait before the refused Pod is made again.
const admissionBackoff = time.Second

// refusedAtAdmission reports whether Pod p was refused by its kubelet
// before any container ran (reason OutOfcpu, OutOfmemory,
// OutOfnvidia.com/gpu, ...: the node's free resources as the kubelet
// counts them did not hold it).
func refusedAtAdmission(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && strings.HasPrefix(p.Status.Reason, "OutOf") && len(p.Status.ContainerStatuses) == 0
}

// readmit handles Pod p of task id, refused at admission: within
// admissionRetry of the task's first refusal, while the task is live,
// the Pod is deleted and made again (same name, spec and node) after
// admissionBackoff, and readmit returns true (no event: the task is still
// starting). False once the time is up: the refusal stands and the task is
// lost saying why.
func (b *Backend) readmit(id structs.TaskID, p *corev1.Pod) bool {
	if b.cfg.Host == nil {
		return false
	}
	if tok, live := b.cfg.Host.Task(id); tok == "" || !live {
		return false
	}
	now := time.Now()
	b.mu.Lock()
	if b.readmitting[p.UID] {
		b.mu.Unlock()
		return true
	}
	first, ok := b.refusedSince[id]
	if !ok {
		first = now
		b.refusedSince[id] = now
	}
	if now.Sub(first) > admissionRetry {
		delete(b.refusedSince, id)
		b.mu.Unlock()
		return false
	}
	b.readmitting[p.UID] = true
	b.mu.Unlock()
	b.log.Info("the kubelet refused the task's Pod at admission: making it again", "task", id, "pod", p.Name,
		"node", p.Spec.NodeName, "reason", podWhy(p))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.remake(id, p)
	}()
	return true
}

// remake deletes refused Pod p and, once it is gone and admissionBackoff
// has passed, creates it again if its task is still live.
func (b *Backend) remake(id structs.TaskID, p *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := b.cfg.Client.CoreV1().Pods(p.Namespace)
	zero := int64(0)
	err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		b.log.Warn("delete refused pod", "task", id, "pod", p.Name, "err", err)
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != p.UID) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-b.stopCh:
			return
		case <-tick.C:
		}
	}
	select {
	case <-time.After(admissionBackoff):
	case <-b.stopCh:
		return
	}
	tok, live := b.cfg.Host.Task(id)
	if tok == "" || !live || allocHash(tok) != p.Annotations[AnnotationAlloc] {
		return // stopped, or placed again, meanwhile
	}
	np := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations},
		Spec: *p.Spec.DeepCopy()}
	if _, err := pods.Create(ctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.log.Warn("make refused pod again", "task", id, "pod", p.Name, "err", err)
	}
}
