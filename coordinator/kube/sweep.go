package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/pkg/structs"
)

// sweepLoop runs Sweep on the leader every Config.Sweep.
func (b *Backend) sweepLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.Sweep)
	defer t.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-t.C:
		}
		if b.leads() {
			b.Sweep()
		}
	}
}

// Sweep does the leader's cleaning once:
//
//   - a task whose Pod is bound to a Node not Ready (or deleted) for
//     NodeGrace, once this server has led for HeartbeatTTL (see
//     nodegrace.go), is reported Lost, and its Pod deleted at once (its
//     kubelet is not there to stop it gracefully);
//   - a Pod of a task the state does not know, knows ended, or knows with
//     another allocation is deleted (with the stop grace while it runs);
//     one of a task known ended is first kept a while (keepEnded: a
//     finished one KeepFinished, for its log);
//   - the ConfigMaps and Secrets of atom's configs that no task holding
//     resources uses and that are no config's current version are
//     deleted (configs.go).
func (b *Backend) Sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := b.cfg.Now()
	late := map[string]time.Duration{}
	elected, leads, ttl := b.termStart()
	b.mu.Lock()
	for name, since := range b.notReady {
		if d, ok := nodeLate(since, now, elected, b.cfg.NodeGrace, ttl); ok && leads {
			late[name] = d
		}
	}
	b.mu.Unlock()
	onNode := map[string]int{}
	for _, o := range b.pods.List() {
		p, ok := o.(*corev1.Pod)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		id := structs.TaskID(p.Annotations[LabelTask])
		if id == "" {
			continue
		}
		onNode[p.Spec.NodeName]++
		if d, ok := late[p.Spec.NodeName]; ok && p.Spec.NodeName != "" && b.current(id, p) {
			b.nodeLost(ctx, id, p, d)
			continue
		}
		if b.cfg.Host == nil {
			continue
		}
		tok, live := b.cfg.Host.Task(id)
		if tok != "" && live && (p.Annotations[AnnotationAlloc] == "" || p.Annotations[AnnotationAlloc] == allocHash(tok)) {
			continue
		}
		if tok != "" && !live && b.keepEnded(p, now) {
			continue // its log is kept for job logs (logs.go)
		}
		b.orphan(ctx, id, p, tok != "" && live)
	}
	// Spark's executor Pods on such nodes are their tasks' too.
	for _, o := range b.execs.List() {
		p, ok := o.(*corev1.Pod)
		if !ok || p.DeletionTimestamp != nil || p.Spec.NodeName == "" || !b.ours(p) || b.cfg.Host == nil {
			continue
		}
		onNode[p.Spec.NodeName]++
		if d, ok := late[p.Spec.NodeName]; ok {
			if id, _, live := b.cfg.Host.ExecutorOf(structs.JobID(p.Labels[LabelJob]), p.Name); id != "" && live {
				b.nodeLost(ctx, id, p, d)
			}
		}
	}
	// Forget deleted nodes once nothing is left on them.
	b.mu.Lock()
	for name := range late {
		if _, exists, _ := b.nodes.GetStore().GetByKey(name); !exists && onNode[name] == 0 {
			delete(b.notReady, name)
		}
	}
	b.mu.Unlock()
	b.sweepConfigs(ctx)
}

// nodeLost reports task id Lost, its Pod p being on a node not Ready for
// d, and deletes the Pod.
func (b *Backend) nodeLost(ctx context.Context, id structs.TaskID, p *corev1.Pod, d time.Duration) {
	b.mu.Lock()
	last := b.reported[id]
	b.reported[id] = structs.TaskLost // the Pod's deletion is not news
	b.mu.Unlock()
	if !ended(last) {
		msg := fmt.Sprintf("node %s has not been Ready for %s", p.Spec.NodeName, d.Round(time.Second))
		err := b.report(id, structs.TaskEvent{State: structs.TaskLost, Message: msg})
		if errors.Is(err, backend.ErrTaskEnded) {
			b.log.Debug("task report after its end", "task", id, "pod", p.Name, "err", err)
		} else if err != nil {
			b.log.Warn("task report failed", "task", id, "pod", p.Name, "err", err)
			b.mu.Lock()
			b.reported[id] = last // the next sweep tries again
			b.mu.Unlock()
			return
		}
		b.log.Info("task lost: its node is not ready", "task", id, "node", p.Spec.NodeName, "for", d.Round(time.Second))
	}
	b.forceDelete(ctx, id)
}

// orphan deletes Pod p of task id, which the state does not know, knows
// ended, or knows with another allocation (running: the task itself
// still runs, another allocation of it).
func (b *Backend) orphan(ctx context.Context, id structs.TaskID, p *corev1.Pod, running bool) {
	if !running {
		b.mu.Lock()
		b.stopped[id] = true
		b.reported[id] = structs.TaskLost // its end is the state's already: nothing to report
		b.mu.Unlock()
	}
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	secs := int64(0)
	if !finished && p.Spec.NodeName != "" {
		secs = int64(math.Ceil(b.cfg.Grace.Seconds()))
		if b.cfg.Grace <= 0 {
			secs = 30
		}
	}
	b.log.Info("deleting a pod the state has no running task for", "pod", p.Name, "task", id, "phase", p.Status.Phase)
	// Delete this very Pod (by UID): the task's current one may have
	// the same name by the time the call arrives.
	err := b.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		b.log.Warn("delete pod", "pod", p.Name, "err", err)
	}
}
