package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func notReadyNode(transition time.Time) *corev1.Node {
	return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(transition.Add(-time.Hour))},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(transition)},
	}}}
}

func TestNotReadySince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		node *corev1.Node
		live bool
		want time.Time
	}{
		{"first seen down: the API server's transition", notReadyNode(now.Add(-5 * time.Minute)), false, now.Add(-5 * time.Minute)},
		{"seen going down: this server's clock", notReadyNode(now.Add(-5 * time.Minute)), true, now},
		{"a transition in the future: now", notReadyNode(now.Add(time.Hour)), false, now},
		{"a transition at now", notReadyNode(now), false, now},
		{"no Ready condition: now", &corev1.Node{}, false, now},
		{"Ready with no transition time: now", notReadyNode(time.Time{}), false, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, notReadySince(tc.node, tc.live, now))
		})
	}
}

func TestNodeLate(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const grace, ttl = 40 * time.Second, 15 * time.Second
	for _, tc := range []struct {
		name           string
		since, elected time.Time
		late           bool
	}{
		{"within the grace", now.Add(-39 * time.Second), now.Add(-time.Hour), false},
		{"past the grace, leading long", now.Add(-40 * time.Second), now.Add(-time.Hour), true},
		{"past the grace, elected within a TTL (C20)", now.Add(-time.Hour), now.Add(-14 * time.Second), false},
		{"past the grace, elected a TTL ago", now.Add(-time.Hour), now.Add(-15 * time.Second), true},
		{"no term known", now.Add(-time.Minute), time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, late := nodeLate(tc.since, now, tc.elected, grace, ttl)
			assert.Equal(t, tc.late, late)
			assert.Equal(t, now.Sub(tc.since), d)
		})
	}
}

// The informer's events: a node first seen down takes its transition time;
// one seen going down, this server's clock; back Ready, forgotten; a
// deleted one down from now unless it was down already.
func TestNoteNode(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := &Backend{cfg: Config{Now: func() time.Time { return now }}, notReady: map[string]time.Time{}}
	ready := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}}
	down := notReadyNode(now.Add(-5 * time.Minute))
	down.Name = "n1"

	b.noteNode(nil, down)
	assert.Equal(t, now.Add(-5*time.Minute), b.notReady["n1"], "first seen down")
	b.noteNode(down, down)
	assert.Equal(t, now.Add(-5*time.Minute), b.notReady["n1"], "still down: unchanged")
	b.noteNode(down, ready)
	assert.NotContains(t, b.notReady, "n1", "Ready again")
	b.noteNode(ready, down)
	assert.Equal(t, now, b.notReady["n1"], "seen going down")
	b.noteNodeGone(down)
	assert.Equal(t, now, b.notReady["n1"])

	gone := ready.DeepCopy()
	gone.Name = "n2"
	b.noteNodeGone(gone)
	assert.Equal(t, now, b.notReady["n2"], "deleted while Ready")
}
