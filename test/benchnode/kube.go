package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// kubeResult is each Pod's timing, in creation order, from just before
// its creation until the watch saw it bound and Running.
type kubeResult struct {
	submitToBound, submitToRunning []time.Duration
}

// runKube starts kube-scheduler and creates the plain Pods one after
// another, each once the one before it runs. The node's teardown stops
// them.
func runKube(ctx context.Context, e *nodetest.Env, shape *podShape) (kubeResult, error) {
	var r kubeResult
	if err := e.Cluster.StartKubeScheduler(ctx); err != nil {
		return r, fmt.Errorf("start kube-scheduler: %w", err)
	}
	w, err := watchPods(ctx, e.Cluster.Admin, kubeNamespace)
	if err != nil {
		return r, err
	}
	defer w.close()
	for i := range *flagServices {
		name := fmt.Sprintf("bench-%02d", i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "benchnode"}},
			Spec: corev1.PodSpec{
				PriorityClassName:            shape.priorityClass,
				RestartPolicy:                corev1.RestartPolicyNever,
				EnableServiceLinks:           new(bool),
				AutomountServiceAccountToken: new(bool),
				Containers: []corev1.Container{{
					Name:            "task",
					Image:           shape.image,
					ImagePullPolicy: shape.pullPolicy,
					Command:         []string{"sleep", "infinity"},
					Resources:       *shape.resources.DeepCopy(),
				}},
			},
		}
		t0 := time.Now()
		if _, err := e.Cluster.Admin.CoreV1().Pods(kubeNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return r, fmt.Errorf("create Pod %s: %w", name, err)
		}
		wctx, cancel := context.WithTimeout(ctx, *flagEach)
		err := w.until(wctx, "Pod "+name+" Running", func(times map[string]*podTimes, _ map[string]bool) bool {
			t := times[name]
			return t != nil && !t.running.IsZero()
		})
		cancel()
		if err != nil {
			return r, fmt.Errorf("%w: %s", err, describePod(e, name))
		}
		pt := w.pod(name)
		r.submitToBound = append(r.submitToBound, pt.bound.Sub(t0))
		r.submitToRunning = append(r.submitToRunning, pt.running.Sub(t0))
		logf("kube-scheduler: Pod %s: created→bound %.2fs, →Running %.2fs", name, pt.bound.Sub(t0).Seconds(), pt.running.Sub(t0).Seconds())
	}
	return r, nil
}

// describePod says where Pod name stands, for an error.
func describePod(e *nodetest.Env, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := e.Cluster.Admin.CoreV1().Pods(kubeNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("node %q, phase %s, conditions %+v, containers %+v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
}
