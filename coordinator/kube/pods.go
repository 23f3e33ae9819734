package kube

import (
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// observe turns a Pod's change into a task event, once per state:
//
//	phase Running                  → Running (endpoint podIP:7077)
//	phase Succeeded / Failed       → Succeeded / Failed with the container's exit code
//	deleted after Stop             → Failed (137 unless the container said otherwise)
//	deleted otherwise, not ended   → Lost ("deleted outside atom")
func (b *Backend) observe(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	id := structs.TaskID(p.Annotations[LabelTask])
	if id == "" {
		return
	}
	ev, ok := b.eventFor(id, p, deleted)
	if !ok {
		return
	}
	b.mu.Lock()
	last := b.reported[id]
	if last == ev.State || ended(last) {
		b.mu.Unlock()
		return
	}
	b.reported[id] = ev.State
	b.mu.Unlock()
	if err := b.report(id, ev); err != nil {
		b.log.Warn("task report failed", "task", id, "pod", p.Name, "err", err)
		b.mu.Lock()
		if b.reported[id] == ev.State {
			b.reported[id] = last // the next change or resync tries again
		}
		b.mu.Unlock()
	}
	if deleted {
		b.mu.Lock()
		delete(b.stopped, id)
		delete(b.reported, id)
		delete(b.tokens, id)
		b.mu.Unlock()
	}
}

// eventFor is the event Pod p of task id stands for, if any.
func (b *Backend) eventFor(id structs.TaskID, p *corev1.Pod, deleted bool) (state.TaskEvent, bool) {
	code, terminated, why := exitOf(p)
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		return state.TaskEvent{State: structs.TaskSucceeded, ExitCode: code}, true
	case p.Status.Phase == corev1.PodFailed:
		if !terminated {
			code = 1
		}
		return state.TaskEvent{State: structs.TaskFailed, ExitCode: code, Message: why}, true
	case deleted:
		b.mu.Lock()
		stopped := b.stopped[id]
		b.mu.Unlock()
		if stopped {
			if !terminated {
				code = 137
			}
			return state.TaskEvent{State: structs.TaskFailed, ExitCode: code, Message: "pod deleted by atom"}, true
		}
		return state.TaskEvent{State: structs.TaskLost, Message: fmt.Sprintf("pod %s/%s was deleted outside atom", p.Namespace, p.Name)}, true
	case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
		ev := state.TaskEvent{State: structs.TaskRunning}
		if p.Status.PodIP != "" {
			ev.Endpoint = net.JoinHostPort(p.Status.PodIP, strconv.Itoa(LaunchPort))
		}
		return ev, true
	}
	return state.TaskEvent{}, false
}

// exitOf returns the task container's exit code, whether it has
// terminated, and what Kubernetes says about it.
func exitOf(p *corev1.Pod) (code int, terminated bool, why string) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != ContainerName || c.State.Terminated == nil {
			continue
		}
		t := c.State.Terminated
		why = t.Reason
		if t.Message != "" {
			why += ": " + t.Message
		}
		return int(t.ExitCode), true, why
	}
	why = p.Status.Reason
	if p.Status.Message != "" {
		why += ": " + p.Status.Message
	}
	return 0, false, why
}

func (b *Backend) token(id structs.TaskID) string {
	b.mu.Lock()
	tok := b.tokens[id]
	b.mu.Unlock()
	if tok == "" && b.cfg.TokenOf != nil {
		tok = b.cfg.TokenOf(id)
	}
	return tok
}

func (b *Backend) report(id structs.TaskID, ev state.TaskEvent) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := b.hb.Heartbeat(id, b.token(id), ev); err != nil {
		return fmt.Errorf("report task %s %s: %w", id, ev.State, err)
	}
	return nil
}

// beat heartbeats every task whose Pod is Running, as the kubelet reports
// it (Config.Beat).
func (b *Backend) beat() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-b.stopCh:
			return
		case <-t.C:
		}
		for _, o := range b.pods.GetStore().List() {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			id := structs.TaskID(p.Annotations[LabelTask])
			if err := b.report(id, state.TaskEvent{}); err != nil {
				b.log.Debug("heartbeat failed", "task", id, "err", err)
			}
		}
	}
}

// Running lists the tasks whose Pods the informer sees Running.
func (b *Backend) Running() []structs.TaskID {
	var ids []structs.TaskID
	for _, o := range b.pods.GetStore().List() {
		if p, ok := o.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			ids = append(ids, structs.TaskID(p.Annotations[LabelTask]))
		}
	}
	return ids
}

func ended(s structs.TaskState) bool {
	return s == structs.TaskSucceeded || s == structs.TaskFailed || s == structs.TaskLost
}
