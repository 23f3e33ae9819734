package k8stest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitPod polls Pod namespace/name (every 50ms, as Admin) until cond holds,
// and returns it; it fails t after timeout (30s when 0), naming the Pod's
// last phase.
func (c *Cluster) WaitPod(t testing.TB, namespace, name string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	var pod *corev1.Pod
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.Admin.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		state := "never seen"
		if pod != nil {
			state = fmt.Sprintf("phase %s on node %q", pod.Status.Phase, pod.Spec.NodeName)
		} else if lastErr != nil {
			state = lastErr.Error()
		}
		t.Fatalf("cluster %s: pod %s/%s: condition not met in %s (%s)", c.Name, namespace, name, timeout, state)
	}
	return pod
}

// WaitPodPhase waits until Pod namespace/name is in phase.
func (c *Cluster) WaitPodPhase(t testing.TB, namespace, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	return c.WaitPod(t, namespace, name, 0, func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}
