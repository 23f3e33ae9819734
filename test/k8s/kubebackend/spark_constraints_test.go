package kubebackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// executorAsking creates an executor Pod of job as executorOf does, asking
// for cpu and memory (the limit too), with edit applied to its spec.
func executorAsking(t *testing.T, c *k8stest.Cluster, job structs.JobID, driver *corev1.Pod, name, cpu, memory string, edit func(*corev1.PodSpec)) *corev1.Pod {
	t.Helper()
	mem := resource.MustParse(memory)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"spark-app-selector": "spark-" + string(job), "spark-role": "executor",
				"spark-exec-id": name, "atom.io/job": string(job)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID,
				Controller: new(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "atom", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "atom/spark:test", Args: []string{"executor"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem}}}}},
	}
	if edit != nil {
		edit(&p.Spec)
	}
	p, err := c.Admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
	return p
}

// boundTo waits until Pod name is bound and returns its node.
func boundTo(t *testing.T, c *k8stest.Cluster, name string) string {
	t.Helper()
	var node string
	require.Eventually(t, func() bool {
		p, err := c.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		node = p.Spec.NodeName
		return node != ""
	}, 30*time.Second, 50*time.Millisecond, "pod %s is bound", name)
	return node
}

// waitsFor waits until unbound Pod name says, as kube-scheduler would,
// that it cannot be scheduled, and returns the message of its
// PodScheduled condition and its FailedScheduling events.
func waitsFor(t *testing.T, c *k8stest.Cluster, name string) (string, []corev1.Event) {
	t.Helper()
	ctx := context.Background()
	var msg string
	var evs []corev1.Event
	// The condition is written first, the event right after it.
	require.Eventually(t, func() bool {
		p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, p.Spec.NodeName, "pod %s was bound", name)
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse && cd.Reason == corev1.PodReasonUnschedulable {
				msg = cd.Message
				evs = failedScheduling(t, c, name)
				return len(evs) > 0
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "pod %s is Unschedulable, with its event", name)
	return msg, evs
}

// failedScheduling lists the FailedScheduling events of Pod name.
func failedScheduling(t *testing.T, c *k8stest.Cluster, name string) []corev1.Event {
	t.Helper()
	list, err := c.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": name, "reason": "FailedScheduling"}.String()})
	require.NoError(t, err)
	return list.Items
}

// TestSparkExecutorPodConstraints: an executor Pod goes only to a node
// that its job and its own nodeSelector, required node affinity and
// tolerations allow, and is held at what it asks (within its job's
// executor); one that no node allows stays unbound, saying why in its
// PodScheduled condition and one FailedScheduling event, and is bound
// once it allows a node.
func TestSparkExecutorPodConstraints(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	spot := corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoExecute}
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "64", Memory: "256Gi", Labels: map[string]string{"disk": "ssd"}},
		k8stest.NodeSpec{Name: "cpu-2", CPU: "64", Memory: "256Gi", Labels: map[string]string{"disk": "hdd"}, Taints: []corev1.Taint{spot}})
	co := startCoordinator(t, 5*time.Second, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx := context.Background()

	// The job tolerates the spot taint (and plugins/spark gives its
	// executor Pods that toleration too).
	id := co.submit(t, sparkSpec("geo", "normal")+"tolerations: [{key: spot, operator: Exists}]\n")
	co.waitJob(t, id, "runs", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	d := driverPod(t, c, id)
	tolerates := []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoExecute}}

	// Its own node selector: the tainted hdd node, which it tolerates; it
	// asks 2 CPUs and 3 GiB of the 4 and 9 its job's executor may.
	executorAsking(t, c, id, d, "geo-exec-hdd", "2", "3Gi", func(s *corev1.PodSpec) {
		s.NodeSelector, s.Tolerations = map[string]string{"disk": "hdd"}, tolerates
	})
	assert.Equal(t, "cpu-2", boundTo(t, c, "geo-exec-hdd"))
	// Its own required affinity (terms ORed): the ssd node.
	executorAsking(t, c, id, d, "geo-exec-ssd", "500m", "1Gi", func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd", "nvme"}},
					{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist}}},
			}}}}
	})
	assert.Equal(t, "cpu-1", boundTo(t, c, "geo-exec-ssd"))
	_, tasks := co.waitJob(t, id, "has 2 executors running", func(_ *structs.Job, ts []*structs.Task) bool {
		return len(running(executorTasks(ts))) == 2
	})
	held := map[string]structs.Resources{}
	for _, x := range executorTasks(tasks) {
		held[x.Executor] = x.Resources
	}
	assert.Equal(t, map[string]structs.Resources{"geo-exec-hdd": {MilliCPU: 2000, Memory: 3 << 30}, "geo-exec-ssd": {MilliCPU: 500, Memory: 1 << 30}},
		held, "held at what each Pod asks")
	out := co.cli(t, "job", "status", string(id))
	assert.Regexp(t, `executor geo-exec-hdd +1 +cpu-2 +Running +cpu=2 memory=3Gi`, out)
	q, err := co.Quota(ctx, "user:dev")
	require.NoError(t, err)
	assert.Equal(t, structs.ResourceList{structs.KeyCPU: 18000, structs.KeyMemory: 40 << 30}, q.Usage, "the job's charge is unchanged")

	// The hdd node, but not its taint: no node allows it. It waits, saying
	// why, once.
	executorAsking(t, c, id, d, "geo-exec-untolerated", "4", "9Gi", func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"disk": "hdd"}
	})
	msg, evs := waitsFor(t, c, "geo-exec-untolerated")
	want := "executor waits for room: no node in its driver's pool public of cluster k8s meets the executor Pod's own node selector, " +
		"node affinity and tolerations (2 nodes: 1 not matching its node selector or required node affinity, " +
		"1 with a taint it does not tolerate, such as spot=true:NoExecute): does not fit now"
	assert.Equal(t, want, msg)
	require.Len(t, evs, 1)
	assert.Equal(t, corev1.EventTypeWarning, evs[0].Type)
	assert.Equal(t, want, evs[0].Message)
	assert.Equal(t, "atom", evs[0].Source.Component)
	assert.Contains(t, co.log.String(), "spark executor pod waits")
	// Tried again at every sweep (200 ms), it is told once.
	assert.Never(t, func() bool { return len(failedScheduling(t, c, "geo-exec-untolerated")) != 1 }, 2*time.Second, 100*time.Millisecond)

	// An affinity no node has: waits too.
	executorAsking(t, c, id, d, "geo-exec-nowhere", "1", "1Gi", func(s *corev1.PodSpec) {
		s.Tolerations = tolerates
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "disk", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"ssd", "hdd"}}}}}}}}
	})
	msg, _ = waitsFor(t, c, "geo-exec-nowhere")
	assert.Contains(t, msg, "(2 nodes: 2 not matching its node selector or required node affinity)")

	// The waiting Pod gets the toleration (Kubernetes lets a Pod's
	// tolerations grow): it is bound to the hdd node.
	p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, "geo-exec-untolerated", metav1.GetOptions{})
	require.NoError(t, err)
	p.Spec.Tolerations = append(p.Spec.Tolerations, tolerates...)
	_, err = c.Admin.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "cpu-2", boundTo(t, c, "geo-exec-untolerated"))
	p, err = c.Admin.CoreV1().Pods(ns).Get(ctx, "geo-exec-untolerated", metav1.GetOptions{})
	require.NoError(t, err)
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodScheduled {
			assert.Equal(t, corev1.ConditionTrue, cd.Status, "bound: PodScheduled is True again")
		}
	}
	_, tasks = co.waitJob(t, id, "has 3 executors", func(_ *structs.Job, ts []*structs.Task) bool { return len(executorTasks(ts)) == 3 })
	for _, x := range executorTasks(tasks) {
		if x.Executor == "geo-exec-untolerated" {
			assert.Equal(t, structs.Resources{MilliCPU: 4000, Memory: 9 << 30}, x.Resources)
		}
	}
	p, err = c.Admin.CoreV1().Pods(ns).Get(ctx, "geo-exec-nowhere", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.Spec.NodeName, "the Pod no node allows is never bound")
}
