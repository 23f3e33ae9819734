package kube_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/taskenv"
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

// TestPodEnvPacked: a task Pod carries the job's variables, what atom
// needs to reach the coordinator packed in ATOM_TASK_ENV, and the Pod's
// IP; the rest of atom's environment (the job spec above all: a job of
// 80 KiB makes a Pod no larger) is LaunchEnv, which atom fetches. Its
// labels and annotations are those something reads, and no port.
func TestPodEnvPacked(t *testing.T) {
	b := &kube.Backend{}
	task := &structs.Task{ID: "j-0-ab12", Job: "j", Node: "gpu-1", Attempt: 1}
	job := &structs.Job{ID: "j", Kind: structs.KindCommand, Image: "img", Command: []string{"sleep", "1"}, Owner: "alice",
		Env: map[string]string{"B": "2", "A": "1"}}
	p, err := b.Pod(task, job)
	require.NoError(t, err)
	var names []string
	env := p.Spec.Containers[0].Env
	for _, e := range env {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"A", "B", structs.TaskEnvVar, "ATOM_POD_IP"}, names)
	packed, err := structs.DecodeTaskEnv(env[2].Value)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ATOM_COORDINATOR": "", "ATOM_TASK_ID": "j-0-ab12", "ATOM_TOKEN_FILE": kube.TokenPath}, packed)
	assert.Equal(t, map[string]string{"atom.io/managed-by": "atom", "atom.io/cluster": "", "atom.io/job": "j"}, p.Labels)
	assert.Equal(t, []string{"atom.io/job", "atom.io/task"}, slices.Sorted(maps.Keys(p.Annotations)))
	assert.Empty(t, p.Spec.Containers[0].Ports)

	launch := b.LaunchEnv(task, job)
	assert.Equal(t, "j-0-ab12", launch["ATOM_TASK_ID"])
	assert.Equal(t, "1", launch["ATOM_ATTEMPT"])
	assert.Equal(t, p.Name, launch["ATOM_POD_NAME"])
	assert.Equal(t, "img", launch["ATOM_IMAGE"], "the Pod's image, for a spark driver's executors")
	assert.Contains(t, launch["ATOM_JOB_SPEC"], `"command":["sleep","1"]`)
	assert.NotContains(t, launch, "ATOM_TOKEN")

	raw, err := json.Marshal(p)
	require.NoError(t, err)
	job.Args = []string{strings.Repeat("x", 80<<10)} // 80 KiB as ATOM_JOB_SPEC
	require.NoError(t, taskenv.Check(job), "a job the API accepts")
	big, err := b.Pod(task, job)
	require.NoError(t, err)
	bigRaw, err := json.Marshal(big)
	require.NoError(t, err)
	assert.Less(t, len(bigRaw), len(raw)+81<<10, "the job's args once, in the container's")
}

// TestNodeFuseResourceNotADevice: a FUSE device plugin's resource on a CPU
// node does not make it a device node (CPU-only jobs still go there);
// another extended resource does.
func TestNodeFuseResourceNotADevice(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), kube.FuseResource: resource.MustParse("110")}}}
	assert.Empty(t, kube.NodeFromK8s(n, "k8s").Capacity.Devices)
	n.Status.Allocatable["example.com/camera"] = resource.MustParse("2")
	assert.Equal(t, map[string]int64{"example.com/camera": 2}, kube.NodeFromK8s(n, "k8s").Capacity.Devices)
}
