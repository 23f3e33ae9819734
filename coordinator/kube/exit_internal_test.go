package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExitOf: a task container ended by a signal with no report from atom
// (which exits with its job's status after reporting it) is atom killed,
// and the task's message says so; an executor's container is not atom.
func TestExitOf(t *testing.T) {
	pod := func(managed string, code int32, reason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelManaged: managed}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}}}
	}
	for _, c := range []struct {
		p    *corev1.Pod
		code int
		why  string
	}{
		{pod("atom", 3, "Error"), 3, "Error"},
		{pod("atom", 137, "Error"), 137, "Error: exit code 137 (SIGKILL) and no report from atom: atom itself was killed, or could not reach the coordinator"},
		{pod("atom", 137, "OOMKilled"), 137, "OOMKilled: exit code 137 (SIGKILL) and no report from atom: atom itself was killed, or could not reach the coordinator"},
		{pod("atom", 143, ""), 143, "exit code 143 (SIGTERM) and no report from atom: atom itself was killed, or could not reach the coordinator"},
		{pod("spark", 137, "Error"), 137, "Error"},
	} {
		code, terminated, why := exitOf(c.p)
		assert.True(t, terminated)
		assert.Equal(t, c.code, code)
		assert.Equal(t, c.why, why)
	}
}
