package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/pkg/structs"
)

// observe turns a Pod's change into a task event, once per state:
//
//	phase Running                  → Running (endpoint podIP:7077)
//	phase Succeeded                → Succeeded with the container's exit code
//	phase Failed, the task failed  → Failed with the container's exit code
//	phase Failed, no exit or evicted → Lost (the Pod failed outside its task)
//	deleted after Stop             → Failed (137 unless the container said otherwise)
//	stopped in place by Stop       → as it ended (Failed, reason DeadlineExceeded: 137 if its container never ran)
//	deleted otherwise, not ended   → Lost ("deleted outside atom")
//
// A Pod refused by its kubelet at admission is made again for a while
// first (admission.go). A Pod whose end was reported (committed) is
// deleted.
// Events of an earlier allocation's Pod (a service replica placed again
// keeps its task ID, so its Pod's name) are ignored.
func (b *Backend) observe(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	if deleted || p.Status.Phase != corev1.PodPending {
		b.mu.Lock()
		delete(b.pullSince, p.UID) // starting.go
		b.mu.Unlock()
	}
	b.mu.Lock()
	remade := b.readmitting[p.UID]
	if deleted {
		delete(b.readmitting, p.UID)
	}
	b.mu.Unlock()
	if remade {
		return // refused at admission, made again (admission.go)
	}
	id := structs.TaskID(p.Annotations[LabelTask])
	if id == "" || !b.current(id, p) {
		return
	}
	if !deleted && refusedAtAdmission(p) && b.readmit(id, p) {
		return
	}
	if p.Status.Phase == corev1.PodRunning {
		b.mu.Lock()
		delete(b.refusedSince, id)
		b.mu.Unlock()
	}
	ev, ok := b.eventFor(id, p, deleted)
	b.note(id, p, ev, ok, deleted)
}

// note reports ev (if ok) for task id, whose Pod p changed, once per
// state, and deletes a Pod whose end is committed; a deleted Pod's
// bookkeeping is dropped.
func (b *Backend) note(id structs.TaskID, p *corev1.Pod, ev structs.TaskEvent, ok, deleted bool) {
	if ok {
		b.mu.Lock()
		last := b.reported[id]
		skip := last == ev.State || ended(last)
		if !skip {
			b.reported[id] = ev.State
		}
		b.mu.Unlock()
		if !skip {
			err := b.report(id, ev)
			if errors.Is(err, backend.ErrTaskEnded) {
				// atom reported the end itself, just before it exited
				// (or the task was declared lost): nothing to add.
				b.log.Debug("task report after its end", "task", id, "pod", p.Name, "err", err)
			} else if err != nil {
				b.log.Warn("task report failed", "task", id, "pod", p.Name, "err", err)
				b.mu.Lock()
				if b.reported[id] == ev.State {
					b.reported[id] = last // the next change or resync tries again
				}
				b.mu.Unlock()
			} else if ended(ev.State) && !deleted && (b.cfg.KeepFinished < 0 || !podFinished(p)) {
				// Its end is committed and it has no log worth keeping
				// (or none is kept): the Pod has nothing more to say. A
				// finished one is the sweep's to delete, once its log
				// has been kept for KeepFinished.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				b.forceDelete(ctx, id)
				cancel()
			}
		}
	}
	if deleted {
		b.mu.Lock()
		delete(b.stopped, id)
		delete(b.reported, id)
		delete(b.tokens, id)
		delete(b.unbound, id)
		delete(b.boundIDs, id)
		delete(b.refusedSince, id)
		b.mu.Unlock()
	}
}

// current reports whether Pod p is for task id's allocation as this
// backend knows it (or knows no token to tell).
func (b *Backend) current(id structs.TaskID, p *corev1.Pod) bool {
	a := p.Annotations[AnnotationAlloc]
	if a == "" {
		return true
	}
	tok := b.token(id)
	return tok == "" || allocHash(tok) == a
}

// lostReasons are the reasons of a Failed Pod that say the node or the
// kubelet ended it, not its task.
var lostReasons = map[string]bool{"Evicted": true, "Preempting": true, "NodeLost": true, "Shutdown": true,
	"NodeShutdown": true, "Terminated": true, "NodeAffinity": true, "UnexpectedAdmissionError": true}

// deadlineExceeded is the reason of a Pod its kubelet ended past its
// activeDeadlineSeconds, as Stop ends a Pod in place.
const deadlineExceeded = "DeadlineExceeded"

// eventFor is the event Pod p of task id stands for, if any.
func (b *Backend) eventFor(id structs.TaskID, p *corev1.Pod, deleted bool) (structs.TaskEvent, bool) {
	code, terminated, why := exitOf(p)
	b.mu.Lock()
	stopped := b.stopped[id]
	b.mu.Unlock()
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		return structs.TaskEvent{State: structs.TaskSucceeded, ExitCode: code}, true
	case p.Status.Phase == corev1.PodFailed && stopped && p.Status.Reason == deadlineExceeded:
		// Stopped in place (Stop): its container's exit, or none if it
		// never started.
		if !terminated {
			code = 137
		}
		return structs.TaskEvent{State: structs.TaskFailed, ExitCode: code, Message: "pod stopped by atom"}, true
	case p.Status.Phase == corev1.PodFailed && (!terminated || lostReasons[p.Status.Reason]):
		msg := fmt.Sprintf("pod %s/%s failed outside its task", p.Namespace, p.Name)
		if r := podWhy(p); r != "" {
			msg += ": " + r
		}
		return structs.TaskEvent{State: structs.TaskLost, Message: msg}, true
	case p.Status.Phase == corev1.PodFailed:
		return structs.TaskEvent{State: structs.TaskFailed, ExitCode: code, Message: why}, true
	case deleted:
		if stopped {
			if !terminated {
				code = 137
			}
			return structs.TaskEvent{State: structs.TaskFailed, ExitCode: code, Message: "pod deleted by atom"}, true
		}
		return structs.TaskEvent{State: structs.TaskLost, Message: fmt.Sprintf("pod %s/%s was deleted outside atom", p.Namespace, p.Name)}, true
	case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
		ev := structs.TaskEvent{State: structs.TaskRunning}
		if p.Status.PodIP != "" {
			ev.Endpoint = net.JoinHostPort(p.Status.PodIP, strconv.Itoa(LaunchPort))
		}
		return ev, true
	}
	return structs.TaskEvent{}, false
}

// podWhy is the Pod's own reason and message.
func podWhy(p *corev1.Pod) string {
	why := p.Status.Reason
	if p.Status.Message != "" {
		if why != "" {
			why += ": "
		}
		why += p.Status.Message
	}
	return why
}

// exitOf returns the task container's (an executor Pod's: its first
// container's) exit code, whether it has
// terminated, and what Kubernetes says about it.
func exitOf(p *corev1.Pod) (code int, terminated bool, why string) {
	name := ContainerName
	if p.Labels[LabelManaged] != "atom" && len(p.Spec.Containers) > 0 {
		name = p.Spec.Containers[0].Name // a Spark executor's
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != name || c.State.Terminated == nil {
			continue
		}
		t := c.State.Terminated
		why = t.Reason
		if t.Message != "" {
			why += ": " + t.Message
		}
		if sig := t.ExitCode - 128; sig > 0 && sig < 65 && p.Labels[LabelManaged] == "atom" {
			// atom exits with its job's status after reporting it: a
			// container ended by a signal with no report is atom killed
			// (kill -9, the OOM killer) before it could report.
			why += fmt.Sprintf(": exit code %d (%s) and no report from atom: atom itself was killed, or could not reach the coordinator",
				t.ExitCode, signalName(syscall.Signal(sig)))
		}
		return int(t.ExitCode), true, strings.TrimPrefix(why, ": ")
	}
	return 0, false, podWhy(p)
}

// signalName is sig's name ("SIGKILL"), or "signal N" for one without.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

func (b *Backend) token(id structs.TaskID) string {
	b.mu.Lock()
	tok := b.tokens[id]
	b.mu.Unlock()
	if tok == "" && b.cfg.Host != nil {
		tok, _ = b.cfg.Host.Task(id)
	}
	return tok
}

func (b *Backend) report(id structs.TaskID, ev structs.TaskEvent) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := b.sink.Report(id, b.token(id), ev); err != nil {
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
		for _, o := range b.pods.List() {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			id := structs.TaskID(p.Annotations[LabelTask])
			if !b.current(id, p) {
				continue
			}
			if err := b.report(id, structs.TaskEvent{}); err != nil {
				b.log.Debug("heartbeat failed", "task", id, "err", err)
			}
		}
	}
}

// Running lists the tasks whose Pods the informer sees Running.
func (b *Backend) Running() []structs.TaskID {
	var ids []structs.TaskID
	for _, o := range b.pods.List() {
		if p, ok := o.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			ids = append(ids, structs.TaskID(p.Annotations[LabelTask]))
		}
	}
	return ids
}

func ended(s structs.TaskState) bool {
	return s == structs.TaskSucceeded || s == structs.TaskFailed || s == structs.TaskLost
}
