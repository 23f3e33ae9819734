package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
)

func TestPodName(t *testing.T) {
	for _, tc := range []struct {
		id     structs.TaskID
		exact  bool   // the ID is the name
		prefix string // else the name starts with this
	}{
		{id: "j-1a2b-0-a1", exact: true},
		{id: "J-1A2B-0-a1", prefix: "j-1a2b-0-a1-"},
		{id: "j_x.y-0-a1", prefix: "j-x-y-0-a1-"},
		{id: "-j-0-", prefix: "j-0-"},
		{id: "___", prefix: "t-"},
		{id: structs.TaskID(strings.Repeat("a", 80)), prefix: strings.Repeat("a", 54) + "-"},
	} {
		name := kube.PodName(tc.id)
		assert.Empty(t, validation.IsDNS1123Label(name), "%q → %q", tc.id, name)
		if tc.exact {
			assert.Equal(t, string(tc.id), name)
		} else {
			assert.True(t, strings.HasPrefix(name, tc.prefix), "%q → %q", tc.id, name)
		}
		assert.Equal(t, name, kube.PodName(tc.id), "stable")
	}
	// IDs that differ only in case or punctuation get different names.
	assert.NotEqual(t, kube.PodName("j-A-0-a1"), kube.PodName("j-a-0-a1"))
	assert.NotEqual(t, kube.PodName("j.a-0-a1"), kube.PodName("j_a-0-a1"))
}

func TestLabelValue(t *testing.T) {
	for _, s := range []string{"alice", "alice@example.com", "-x-", strings.Repeat("b", 70), "", "a b/c"} {
		v := kube.LabelValue(s)
		assert.Empty(t, validation.IsValidLabelValue(v), "%q → %q", s, v)
	}
	assert.Equal(t, "alice", kube.LabelValue("alice"))
	assert.NotEqual(t, kube.LabelValue("a@b"), kube.LabelValue("a_b"))
}

func TestPriorityClass(t *testing.T) {
	assert.Equal(t, "atom-high", kube.PriorityClass(structs.PriorityHigh))
	assert.Equal(t, "atom-normal", kube.PriorityClass(structs.PriorityNormal))
	assert.Equal(t, "atom-low", kube.PriorityClass(structs.PriorityLow))
}

func TestPodWithoutImage(t *testing.T) {
	b := &kube.Backend{}
	_, err := b.Pod(&structs.Task{ID: "t", Node: "n"}, &structs.Job{ID: "j"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no image")
}
