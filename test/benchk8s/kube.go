package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// defaultShape is the Pod shape of run 2 when run 1 is skipped: what atom
// gives a one-GPU task on these nodes.
func defaultShape() *podShape {
	r := corev1.ResourceList{
		k8stest.GPUResource:   resource.MustParse("1"),
		corev1.ResourceCPU:    resource.MustParse("12"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
	}
	return &podShape{image: image, priorityClass: "atom-normal", resources: corev1.ResourceRequirements{Requests: r, Limits: r.DeepCopy()}}
}

// runKube is run 2: kube-scheduler places -tasks Pods of atom's shape.
func runKube(ctx context.Context, shape *podShape) (result, error) {
	c, err := startCluster(ctx, "kube")
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if err := c.StartKubeScheduler(ctx); err != nil {
		return result{}, fmt.Errorf("start kube-scheduler: %w", err)
	}
	w, err := watchRunning(ctx, c.Admin, *flagTasks)
	if err != nil {
		return result{}, err
	}
	defer w.close()
	before, err := apiWrites(ctx, c)
	if err != nil {
		return result{}, err
	}
	cpuBefore := readCPU(c)
	start := time.Now()
	err = parallel(*flagTasks, func(i int) error {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%04d", i), Labels: map[string]string{"app": "bench"}},
			Spec: corev1.PodSpec{
				PriorityClassName: shape.priorityClass,
				RestartPolicy:     corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name:      "task",
					Image:     shape.image,
					Args:      []string{"run", "--", "sleep", "infinity"},
					Resources: *shape.resources.DeepCopy(),
				}},
			},
		}
		_, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return result{}, fmt.Errorf("create pods: %w", err)
	}
	r := result{submitted: time.Since(start)}
	if err := w.wait(ctx); err != nil {
		return result{}, err
	}
	r.running = w.at.Sub(start)
	r.cpuBy, r.cpu = readCPU(c).since(cpuBefore)
	r.created, r.bound = w.createdAt.Sub(start), w.boundAt.Sub(start)
	fmt.Fprintf(os.Stderr, "%s: %s\n", "kube", w.progress(start))
	if after, err := apiWrites(ctx, c); err == nil {
		r.writes, r.writesBy = after.since(before)
	}
	return r, nil
}
