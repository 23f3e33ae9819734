package kube

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/atom-sched/atom/pkg/structs"
)

// DefaultKeepFinished is how long a task's finished Pod (Succeeded or
// Failed: its container has exited) is kept once the task's end is
// committed, so that `coordinator job logs` can read what it wrote through
// the Pod log endpoint. A finished Pod holds no resources (the kubelet
// admits Pods by the active ones); the cluster's log shipping
// (deploy/vector.yaml) keeps the output for longer.
const DefaultKeepFinished = time.Hour

// settleUnfinished is how long a Pod whose task the state knows ended,
// but whose container still runs, is left to exit on its own before the
// sweep deletes it: atom reports its exit just before it exits.
const settleUnfinished = 10 * time.Second

// ErrLogsGone wraps fs.ErrNotExist: the task's Pod, and the container log
// the kubelet kept with it, is gone.
var ErrLogsGone = fmt.Errorf("its Pod is gone, and with it the container log the kubelet kept: the cluster's log shipping has it (deploy/vector.yaml ships every task's output): %w", fs.ErrNotExist)

// Logs opens the output of task id's container (stdout and stderr, as the
// kubelet keeps it) through the API server's Pod log endpoint, as `kubectl
// logs` does; with follow, the stream lasts until the container ends.
// Errors wrap fs.ErrNotExist while the Pod or its container has not
// started (the caller may wait) and once the Pod is gone (ErrLogsGone).
func (b *Backend) Logs(id structs.TaskID, follow bool) (io.ReadCloser, error) {
	name, executor := b.podName(id)
	container := ContainerName
	if executor {
		container = "" // Spark's executor Pods have one container of Spark's naming
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if follow {
		ctx, cancel = context.WithCancel(context.Background())
	}
	req := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace).GetLogs(name, &corev1.PodLogOptions{Container: container, Follow: follow})
	rc, err := req.Stream(ctx)
	if err != nil {
		cancel()
		return nil, b.logsError(id, name, err)
	}
	return &cancelOnClose{ReadCloser: rc, cancel: cancel}, nil
}

// logsError says why task id's Pod name has no log to read.
func (b *Backend) logsError(id structs.TaskID, name string, err error) error {
	pod := b.cfg.Namespace + "/" + name
	switch {
	case apierrors.IsNotFound(err):
		if b.cfg.Host != nil {
			if tok, live := b.cfg.Host.Task(id); tok != "" && live {
				return fmt.Errorf("its Pod %s is not created yet: %w", pod, fs.ErrNotExist)
			}
		}
		return fmt.Errorf("Pod %s: %w", pod, ErrLogsGone)
	case apierrors.IsBadRequest(err) && (strings.Contains(err.Error(), "waiting to start") || strings.HasSuffix(apiMessage(err), "is not available")):
		// The container is being created or its image pulled; or the
		// kubelet has run the Pod's sandbox but reports no status for its
		// container yet ("is not available").
		return fmt.Errorf("its Pod %s has not started its container yet (%s): %w", pod, apiMessage(err), fs.ErrNotExist)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("read the log of Pod %s through the API server: %s: the coordinator's identity may not get pods/log: apply deploy/rbac.yaml (ClusterRole atom-coordinator, which grants it) and bind it to the user of the cluster's kubeconfig, or to its service account in the cluster",
			pod, apiMessage(err))
	}
	return fmt.Errorf("read the log of Pod %s through the API server: %s", pod, apiMessage(err))
}

// apiMessage is an API error's message without client-go's wrapping.
func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

// cancelOnClose ends its request's context once the stream is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// podFinished reports whether Pod p's containers have all exited for good
// (restartPolicy Never): its phase is Succeeded or Failed.
func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// finishedAt is when finished Pod p's container ended: the latest
// terminated container's finish time, else its Ready condition's last
// change, else zero.
func finishedAt(p *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.Time.After(at) {
			at = t.FinishedAt.Time
		}
	}
	if at.IsZero() {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.LastTransitionTime.Time.After(at) {
				at = c.LastTransitionTime.Time
			}
		}
	}
	return at
}

// keepEnded reports whether the sweep leaves Pod p of a task whose end is
// committed for now: a finished one for Config.KeepFinished after its
// container ended (or, without a finish time, after the sweep first saw
// it), so its log stays readable; an unfinished one for settleUnfinished
// after the sweep first saw it, to exit by itself.
func (b *Backend) keepEnded(p *corev1.Pod, now time.Time) bool {
	if b.cfg.KeepFinished < 0 {
		return false
	}
	b.mu.Lock()
	seen, ok := b.endedSeen[p.UID]
	if !ok {
		seen = now
		b.endedSeen[p.UID] = now
	}
	b.mu.Unlock()
	keep, since := settleUnfinished, seen
	if podFinished(p) {
		keep = b.cfg.KeepFinished
		if at := finishedAt(p); !at.IsZero() {
			since = at
		}
	}
	if now.Sub(since) < keep {
		return true
	}
	b.mu.Lock()
	delete(b.endedSeen, p.UID)
	b.mu.Unlock()
	return false
}
