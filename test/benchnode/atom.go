package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// atomResult is each service's timing, in submission order.
type atomResult struct {
	// start is the task's ScheduledAt to its StartedAt (both the
	// leader's); submitToRunning from just before the submission to
	// StartedAt.
	start, submitToRunning []time.Duration
	// The parts: submission to ScheduledAt, and ScheduledAt to the watch
	// seeing the task's Pod, and seeing it Running (the kubelet started
	// the container; atom reports Running after its start-up).
	submitToScheduled, scheduledToCreated, scheduledToPodRunning []time.Duration
}

// podShape is what kube-scheduler's Pods copy from atom's.
type podShape struct {
	image         string
	pullPolicy    corev1.PullPolicy
	priorityClass string
	resources     corev1.ResourceRequirements
}

// runAtom runs the services one after another, cancels them, waits until
// their Pods are gone and stops the coordinator.
func runAtom(ctx context.Context, e *nodetest.Env) (atomResult, *podShape, error) {
	var r atomResult
	defer func() { _ = e.StopCoordinator() }() // Close reports its error
	cl := e.Client
	w, err := watchPods(ctx, e.Cluster.Admin, nodetest.Namespace)
	if err != nil {
		return r, nil, err
	}
	defer w.close()

	var jobs []structs.JobID
	for i := range *flagServices {
		spec := fmt.Appendf(nil, "kind: service\nname: bench-%02d\nreplicas: 1\ncommand: [sleep, infinity]\nresources: {accelerators: {type: %s, count: 1}}\n", i, gpuModel)
		t0 := time.Now()
		sub, err := cl.SubmitJob(ctx, spec, "")
		if err != nil {
			return r, nil, fmt.Errorf("submit service %d: %w", i, err)
		}
		jobs = append(jobs, sub.JobID)
		task, err := waitRunning(ctx, cl, sub.JobID)
		if err != nil {
			return r, nil, err
		}
		pt := w.pod(kube.PodName(task.ID))
		r.start = append(r.start, task.StartedAt.Sub(task.ScheduledAt))
		r.submitToRunning = append(r.submitToRunning, task.StartedAt.Sub(t0))
		r.submitToScheduled = append(r.submitToScheduled, task.ScheduledAt.Sub(t0))
		r.scheduledToCreated = append(r.scheduledToCreated, pt.created.Sub(task.ScheduledAt))
		r.scheduledToPodRunning = append(r.scheduledToPodRunning, pt.running.Sub(task.ScheduledAt))
		logf("atom: service %d (%s) on GPU %v: submit→scheduled %.2fs, scheduled→Pod %.2fs, →Pod Running %.2fs, →atom Running %.2fs",
			i, task.ID, task.Accels.Indices(), task.ScheduledAt.Sub(t0).Seconds(), pt.created.Sub(task.ScheduledAt).Seconds(),
			pt.running.Sub(task.ScheduledAt).Seconds(), task.StartedAt.Sub(task.ScheduledAt).Seconds())
	}

	pods, err := e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		return r, nil, fmt.Errorf("read a task Pod's shape: %d Pods, %v", len(pods.Items), err)
	}
	c := pods.Items[0].Spec.Containers[0]
	shape := &podShape{image: c.Image, pullPolicy: c.ImagePullPolicy, priorityClass: pods.Items[0].Spec.PriorityClassName, resources: *c.Resources.DeepCopy()}

	// Cancel them all; their finished Pods go once kept a second.
	t0 := time.Now()
	for _, id := range jobs {
		if _, err := cl.CancelJob(ctx, id); err != nil {
			return r, nil, fmt.Errorf("cancel %s: %w", id, err)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.until(gctx, "atom's Pods deleted after their services were cancelled", func(_ map[string]*podTimes, live map[string]bool) bool {
		return len(live) == 0
	}); err != nil {
		return r, nil, err
	}
	logf("atom: %d services cancelled, their Pods gone in %.1fs", len(jobs), time.Since(t0).Seconds())
	return r, shape, nil
}

// waitRunning waits up to -each until job id's one task is Running and
// returns it; a task that ends fails the run.
func waitRunning(ctx context.Context, cl *client.Client, id structs.JobID) (*structs.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, *flagEach)
	defer cancel()
	last := "no status"
	for {
		st, err := cl.Job(ctx, id)
		if err == nil {
			last = fmt.Sprintf("job %s", st.Job.State)
			for _, t := range st.Tasks {
				last += fmt.Sprintf("; task %s %s exit %d %s", t.ID, t.State, t.ExitCode, t.Message)
				switch {
				case t.State == structs.TaskRunning:
					return t, nil
				case !t.State.HoldsResources():
					return nil, fmt.Errorf("service %s: its task ended before it ran: %s", id, last)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("service %s not Running after %s: %s", id, *flagEach, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
