package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/pkg/structs"
)

// bindGang notes the launch's Pod as created and, once every Pod of its
// gang (Launch.Members) is created (or already bound), binds the unbound
// ones to their nodes. A gang that is not whole is never bound: its
// tear-down has begun.
func (b *Backend) bindGang(ctx context.Context, l backend.Launch) error {
	t := l.Task
	members, whole := l.Members()
	b.mu.Lock()
	b.unbound[t.ID] = t.Node
	if !whole {
		// A sibling failed or is stopping: the gang is being torn
		// down, and this Pod goes with it (Stop) without ever running.
		b.mu.Unlock()
		return nil
	}
	for _, id := range members {
		if _, ok := b.unbound[id]; !ok && !b.isBound(id) {
			b.mu.Unlock()
			return nil // the gang is not complete yet: its last Start binds it
		}
	}
	bind := map[structs.TaskID]structs.NodeID{}
	for _, id := range members {
		if node, ok := b.unbound[id]; ok {
			bind[id] = node
			delete(b.unbound, id)
		}
	}
	b.mu.Unlock()
	pods := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace)
	for _, id := range slices.Sorted(func(yield func(structs.TaskID) bool) {
		for id := range bind {
			if !yield(id) {
				return
			}
		}
	}) {
		node := bind[id]
		err := pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: PodName(id), Namespace: b.cfg.Namespace},
			Target:     corev1.ObjectReference{Kind: "Node", Name: string(node)},
		}, metav1.CreateOptions{})
		if apierrors.IsConflict(err) {
			// Bound already (a retry): success if to the same node.
			if p, gerr := pods.Get(ctx, PodName(id), metav1.GetOptions{}); gerr == nil && p.Spec.NodeName == string(node) {
				err = nil
			}
		}
		if err != nil {
			return b.failStart(ctx, l, id, fmt.Errorf("bind pod %s/%s to node %s: %w", b.cfg.Namespace, PodName(id), node, err))
		}
		b.mu.Lock()
		b.bound(id)
		b.mu.Unlock()
	}
	return nil
}

// isBound reports whether task id's Pod is known bound: by this backend
// or, as the informer has it, by anyone. Guarded by mu.
func (b *Backend) isBound(id structs.TaskID) bool {
	if b.boundIDs[id] {
		return true
	}
	o, ok, err := b.pods.GetByKey(b.cfg.Namespace + "/" + PodName(id))
	if err != nil || !ok {
		return false
	}
	p, ok := o.(*corev1.Pod)
	return ok && p.Spec.NodeName != "" && p.DeletionTimestamp == nil
}

// bound notes task id's Pod as bound. Guarded by mu.
func (b *Backend) bound(id structs.TaskID) { b.boundIDs[id] = true }

// failStart handles a Pod of task id, of launch l's gang, that could not
// be created or bound: id is reported Lost before it started (the
// coordinator requeues its job and stops its siblings) and then the
// gang's Pods not yet bound are deleted, so that none of the gang runs. It
// returns err, with the report's error if that failed too (then Start is
// tried again next cycle).
func (b *Backend) failStart(ctx context.Context, l backend.Launch, id structs.TaskID, err error) error {
	err = fmt.Errorf("start task %s: %w", id, err)
	b.mu.Lock()
	b.reported[id] = structs.TaskLost // its Pod's deletion is not news
	b.mu.Unlock()
	if rerr := b.report(id, structs.TaskEvent{State: structs.TaskLost, Message: "its pod could not be started: " + err.Error()}); rerr != nil {
		b.mu.Lock()
		delete(b.reported, id)
		b.mu.Unlock()
		return errors.Join(err, rerr)
	}
	var undo []structs.TaskID
	b.mu.Lock()
	members, _ := l.Members()
	for _, m := range members {
		if _, ok := b.unbound[m]; ok || m == id {
			undo = append(undo, m)
		}
	}
	b.mu.Unlock()
	for _, id := range undo {
		b.forceDelete(ctx, id)
	}
	return err
}
