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
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/atom-sched/atom/pkg/structs"
)

// Spark executors. A spark job's driver asks Kubernetes
// for executor Pods that name atom's scheduler, carry the label
// atom.io/job and are owned by the driver's Pod (plugins/spark). The
// leader takes each such unbound Pod:
//
//	executor Pod (unbound) ──Host.TakeExecutor──▶ ExecutorAdd committed (node chosen, within the job's limit:
//	                         the room held for the job's minimum executors with its driver first)
//	                       ──Binding────────────▶ bound to that node
//	no room (normal or high job) ──Host.TakeExecutor──▶ ExecutorPreempt committed (low jobs stop, their
//	         room held for the Pod) ──▶ waits (ErrExecutorWait), taken as above once they have gone
//	refused (no live driver of the job's current attempt, job ended,
//	         over its most executors, asks more than the job's executor) ──▶ deleted, never bound
//	executor task Stopping (driver ended, job ended/preempted/cancelled) ──Stop──▶ Pod deleted
//	Pod phases ──▶ the executor task's events, as a task Pod's
//
// Executor Pods are the Pods of the namespace labelled atom.io/job and not
// atom.io/managed-by: Spark's, not atom's own (podinformer.go).

// ErrExecutorWait is what Host.TakeExecutor returns (wrapped) for an
// executor that does not fit now: its Pod stays unbound and is tried again.
var ErrExecutorWait = errors.New("executor waits for room")

// ExecutorRequest is an unbound executor Pod the leader is asked to take.
type ExecutorRequest struct {
	Job      structs.JobID
	Driver   structs.TaskID // the task whose Pod owns the executor's
	Pod      string
	Requests structs.Resources // what the Pod asks for (cpu, memory, nvidia.com/gpu)
	// Where the Pod itself may go, besides its job's constraints: its
	// spec.nodeSelector, required node affinity (nil: none) and
	// tolerations.
	NodeSelector map[string]string
	Affinity     *corev1.NodeSelector
	Tolerations  []corev1.Toleration
}

func (b *Backend) startExecutors() error {
	_, err := b.onPods(partExecutor, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { b.observeExecutor(o, false) },
		UpdateFunc: func(_, o any) { b.observeExecutor(o, false) },
		DeleteFunc: func(o any) { b.observeExecutor(o, true) },
	}, b.cfg.Resync)
	return err
}

// executorLoop has the leader take unbound executor Pods as they come (and
// every Sweep), and heartbeat the executors whose Pods are bound (no atom
// runs in them) every Heartbeat.
func (b *Backend) executorLoop() {
	defer b.wg.Done()
	sweep := time.NewTicker(b.cfg.Sweep)
	defer sweep.Stop()
	every := b.cfg.Heartbeat
	if every <= 0 {
		every = DefaultSweep
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-b.execKick:
		case <-sweep.C:
		case <-beat.C:
			if b.leads() {
				b.beatExecutors()
				b.beatStarting()
			}
			continue
		}
		if b.leads() {
			b.takeExecutors()
		}
	}
}

// leads reports whether this server leads (always without a host).
func (b *Backend) leads() bool { return b.cfg.Host == nil || b.cfg.Host.IsLeader() }

func (b *Backend) kickExecutors() {
	select {
	case b.execKick <- struct{}{}:
	default:
	}
}

// ours reports whether executor Pod p names this backend's scheduler.
func (b *Backend) ours(p *corev1.Pod) bool { return p.Spec.SchedulerName == b.cfg.SchedulerName }

// takeExecutors handles every unbound executor Pod once, and deletes bound
// ones whose task the state does not know or knows ended.
func (b *Backend) takeExecutors() {
	if b.cfg.Host == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range b.execs.List() {
		p, ok := o.(*corev1.Pod)
		if !ok || !b.ours(p) || p.DeletionTimestamp != nil || finished(p) || b.foreign(ctx, p) {
			continue
		}
		job := structs.JobID(p.Labels[LabelJob])
		id, node, live := b.cfg.Host.ExecutorOf(job, p.Name)
		switch {
		case id != "" && live && p.Spec.NodeName == "":
			// Recorded, not bound yet: Start binds it (a new leader's
			// backend driver does not start what an earlier one placed).
			b.noteExecutor(id, p.Name)
			if err := b.bindExecutor(ctx, id, p.Name, node); err != nil {
				b.log.Warn("bind executor pod", "pod", p.Name, "task", id, "err", err)
			}
		case id != "" && live:
			b.noteExecutor(id, p.Name)
		case id != "":
			b.refuse(ctx, p, fmt.Sprintf("its task %s has ended", id))
		case p.Spec.NodeName != "":
			b.refuse(ctx, p, "it was bound by someone else to node "+p.Spec.NodeName)
		default:
			b.takeExecutor(ctx, p, job)
		}
	}
}

// takeExecutor asks the leader for a node for unbound executor Pod p and
// binds it there; a Pod the leader refuses is deleted.
func (b *Backend) takeExecutor(ctx context.Context, p *corev1.Pod, job structs.JobID) {
	driver, why := b.driverOf(p, job)
	if why != "" {
		b.refuse(ctx, p, why)
		return
	}
	req := ExecutorRequest{Job: job, Driver: driver, Pod: p.Name, Requests: podRequests(p),
		NodeSelector: p.Spec.NodeSelector, Tolerations: p.Spec.Tolerations}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		req.Affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	id, node, err := b.cfg.Host.TakeExecutor(ctx, req)
	switch {
	case errors.Is(err, ErrExecutorWait):
		b.executorWaits(ctx, p, err.Error())
		return
	case err != nil:
		b.refuse(ctx, p, err.Error())
		return
	}
	b.forgetWait(p)
	b.noteExecutor(id, p.Name)
	if err := b.bindExecutor(ctx, id, p.Name, node); err != nil {
		b.log.Warn("bind executor pod", "pod", p.Name, "task", id, "err", err)
	}
}

// driverOf finds the task whose Pod owns executor Pod p, which says it is
// job's: "" and why not when there is none.
func (b *Backend) driverOf(p *corev1.Pod, job structs.JobID) (structs.TaskID, string) {
	var ref *metav1.OwnerReference
	for i, r := range p.OwnerReferences {
		if r.Kind == "Pod" && r.APIVersion == "v1" {
			ref = &p.OwnerReferences[i]
		}
	}
	if ref == nil {
		return "", "it has no driver Pod as its owner (Spark sets one from spark.kubernetes.driver.pod.name)"
	}
	o, ok, err := b.pods.GetByKey(p.Namespace + "/" + ref.Name)
	d, _ := o.(*corev1.Pod)
	if err != nil || !ok || d == nil || d.UID != ref.UID || d.DeletionTimestamp != nil {
		return "", fmt.Sprintf("its driver Pod %s (uid %s) is gone", ref.Name, ref.UID)
	}
	if structs.JobID(d.Annotations[LabelJob]) != job {
		return "", fmt.Sprintf("its driver Pod %s runs job %s, not job %s of its label %s", d.Name, d.Annotations[LabelJob], job, LabelJob)
	}
	return structs.TaskID(d.Annotations[LabelTask]), ""
}

// refuse deletes executor Pod p at once, never bound, saying why.
func (b *Backend) refuse(ctx context.Context, p *corev1.Pod, why string) {
	b.log.Info("deleting a spark executor pod atom does not bind", "pod", p.Name, "job", p.Labels[LabelJob], "why", why)
	secs := int64(0)
	if p.Spec.NodeName != "" && !finished(p) {
		secs = int64(math.Ceil(b.cfg.Grace.Seconds()))
		if b.cfg.Grace <= 0 {
			secs = 30
		}
	}
	err := b.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		b.log.Warn("delete executor pod", "pod", p.Name, "err", err)
	}
}

// bindExecutor binds executor task id's Pod to node; one already bound
// there is success. A Pod gone, or one that cannot be bound, reports the
// task Lost (its Pod is deleted).
func (b *Backend) bindExecutor(ctx context.Context, id structs.TaskID, pod string, node structs.NodeID) error {
	pods := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace)
	err := pods.Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: b.cfg.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: string(node)},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) {
		if p, gerr := pods.Get(ctx, pod, metav1.GetOptions{}); gerr == nil && p.Spec.NodeName == string(node) {
			err = nil
		}
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("bind executor pod %s/%s to node %s: %w", b.cfg.Namespace, pod, node, err)
	b.mu.Lock()
	b.reported[id] = structs.TaskLost // its Pod's deletion is not news
	b.mu.Unlock()
	if rerr := b.report(id, structs.TaskEvent{State: structs.TaskLost, Message: err.Error()}); rerr != nil {
		b.mu.Lock()
		delete(b.reported, id)
		b.mu.Unlock()
		return errors.Join(err, rerr)
	}
	b.forceDelete(ctx, id)
	return err
}

// startExecutor is Start for an executor task: bind its Pod (the driver's
// scheduler asked for it; atom only binds it).
func (b *Backend) startExecutor(t *structs.Task, token string) error {
	b.mu.Lock()
	b.tokens[t.ID] = token
	delete(b.stopped, t.ID)
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.noteExecutor(t.ID, t.Executor)
	return b.bindExecutor(ctx, t.ID, t.Executor, t.Node)
}

// noteExecutor remembers executor task id's Pod name.
func (b *Backend) noteExecutor(id structs.TaskID, pod string) {
	b.mu.Lock()
	b.execPods[id] = pod
	b.mu.Unlock()
}

// podName is task id's Pod: an executor's Spark-named one, or PodName.
func (b *Backend) podName(id structs.TaskID) (name string, executor bool) {
	b.mu.Lock()
	pod, ok := b.execPods[id]
	b.mu.Unlock()
	if !ok && b.cfg.Host != nil {
		pod = b.cfg.Host.ExecutorPod(id)
	}
	if pod != "" {
		return pod, true
	}
	return PodName(id), false
}

// observeExecutor turns an executor Pod's change into its task's event,
// as observe does for task Pods; an unbound one wakes the leader's loop.
func (b *Backend) observeExecutor(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok || !b.ours(p) || b.cfg.Host == nil {
		return
	}
	id, _, _ := b.cfg.Host.ExecutorOf(structs.JobID(p.Labels[LabelJob]), p.Name)
	if id == "" {
		if !deleted && p.Spec.NodeName == "" {
			b.kickExecutors()
		}
		if deleted {
			b.forgetWait(p)
			b.forgetForeign(p.UID)
		}
		return
	}
	b.noteExecutor(id, p.Name)
	ev, ok := b.eventFor(id, p, deleted)
	ev.Endpoint = "" // no atom serves launch requests in it
	b.note(id, p, ev, ok, deleted)
	if deleted {
		b.mu.Lock()
		delete(b.execPods, id)
		b.mu.Unlock()
	}
	if deleted || p.Spec.NodeName != "" {
		b.forgetWait(p)
	}
}

// beatExecutors heartbeats every executor task whose Pod is bound and has
// not finished: no atom runs in it to do so.
func (b *Backend) beatExecutors() {
	if b.cfg.Host == nil {
		return
	}
	for _, o := range b.execs.List() {
		p, ok := o.(*corev1.Pod)
		if !ok || !b.ours(p) || p.Spec.NodeName == "" || p.DeletionTimestamp != nil || finished(p) {
			continue
		}
		id, _, live := b.cfg.Host.ExecutorOf(structs.JobID(p.Labels[LabelJob]), p.Name)
		if id == "" || !live {
			continue
		}
		if err := b.report(id, structs.TaskEvent{}); err != nil {
			b.log.Debug("executor heartbeat failed", "task", id, "err", err)
		}
	}
}

// podRequests is what p asks for, as kube-scheduler counts it
// (containers, init containers, pod-level resources, overhead): cpu in
// millicores, memory bytes, nvidia.com/gpu. The API server has already
// made a limit the request a container lacks.
func podRequests(p *corev1.Pod) structs.Resources {
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	var r structs.Resources
	if q, ok := rl[corev1.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		r.Memory = q.Value()
	}
	if q, ok := rl[GPUResource]; ok {
		r.Accels = q.Value()
	}
	return r
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
