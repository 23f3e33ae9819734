package kubebackend_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

const ns = "atom-jobs"

func repoFile(t *testing.T, rel string) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

// recorder is an EventSink that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events []structs.TaskEvent
	tokens map[structs.TaskID]string
}

func (r *recorder) Report(id structs.TaskID, token string, ev structs.TaskEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tokens == nil {
		r.tokens = map[structs.TaskID]string{}
	}
	ev.Task = id
	r.tokens[id] = token
	if ev.State != "" {
		r.events = append(r.events, ev)
	}
	return nil
}

// wait waits until task id has been reported in st and returns the event.
func (r *recorder) wait(t *testing.T, id structs.TaskID, st structs.TaskState) structs.TaskEvent {
	t.Helper()
	var got structs.TaskEvent
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.events {
			if e.Task == id && e.State == st {
				got = e
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "task %s reported %s; got %v", id, st, r.snapshot())
	return got
}

func (r *recorder) snapshot() []structs.TaskEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) token(id structs.TaskID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tokens[id]
}

// env is the environment atom in container c runs with, by name: the
// container's, with the variables packed in structs.TaskEnvVar as atom
// expands them (and the packed one kept), then launch over them (what
// atom fetches from the coordinator: Backend.LaunchEnv).
func env(t *testing.T, c corev1.Container, launch map[string]string) map[string]corev1.EnvVar {
	t.Helper()
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
		if e.Name == structs.TaskEnvVar {
			packed, err := structs.DecodeTaskEnv(e.Value)
			require.NoError(t, err)
			for k, v := range packed {
				m[k] = corev1.EnvVar{Name: k, Value: v}
			}
		}
	}
	for k, v := range launch {
		m[k] = corev1.EnvVar{Name: k, Value: v}
	}
	return m
}

// TestBackend drives coordinator/kube against a real API server with
// kwok's nodes, as the coordinator's identity with only deploy/rbac.yaml's
// rights: a 2 × 8-GPU gang bound to two GPU nodes and reported Running;
// Stop deleting a Pod; a Pod deleted by hand reported Lost; Node objects
// as atom nodes, followed by NodeSync.
// testCA stands for the PEM text of the CA of coordinators that serve
// HTTPS: Pods get it as ATOM_TLS_CA.
const testCA = "-----BEGIN CERTIFICATE-----\nMIIB...test...\n-----END CERTIFICATE-----\n"

func TestBackend(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	c.ApplyFile(t, repoFile(t, "deploy/rbac.yaml"))
	pcs := c.ApplyFile(t, repoFile(t, "deploy/priorityclasses.yaml"))
	require.Len(t, pcs, 4) // the task classes and the coordinator's
	c.CreateNamespace(t, ns)
	special := corev1.Taint{Key: "atom.io/dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule}
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "gpu-a", GPUs: 8, GPUModel: "A100", Labels: map[string]string{"fabric": "ib"}},
		k8stest.NodeSpec{Name: "gpu-b", GPUs: 8, GPUModel: "A100", Taints: []corev1.Taint{special}},
		k8stest.NodeSpec{Name: "cpu-a", CPU: "32", Memory: "128Gi"},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// RBAC takes effect within a moment of being applied.
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	rec := &recorder{}
	b, err := kube.New(ctx, kube.Config{
		Cluster: "k8s", Client: c.Coordinator, Namespace: ns,
		Coordinator: "http://coord-0:8080,http://coord-1:8080", Heartbeat: 5 * time.Second,
		Grace: 20 * time.Second, CoordinatorCA: testCA,
	}, rec)
	require.NoError(t, err)
	defer b.Close()

	job := &structs.Job{
		ID: "j-Gang1", Name: "train", Kind: structs.KindMPI, Owner: "alice@example.com", Priority: structs.PriorityHigh,
		Image: "atom/cuda:test", Command: []string{"python", "train.py"}, Args: []string{"--epochs", "3"},
		Env: map[string]string{"WANDB_MODE": "offline"}, Replicas: 2,
		Resources:   structs.Resources{MilliCPU: 64000, Memory: 512 << 30, AccelType: "A100", Accels: 8},
		Tolerations: []corev1.Toleration{{Key: special.Key, Operator: corev1.TolerationOpEqual, Value: special.Value, Effect: special.Effect}},
	}
	var tasks []*structs.Task
	for i, node := range []structs.NodeID{"gpu-a", "gpu-b"} {
		tasks = append(tasks, &structs.Task{
			ID: structs.MakeTaskID(job.ID, i, 1), Job: job.ID, Index: i, Attempt: 1, Node: node,
			Priority: job.Priority, State: structs.TaskScheduled, Resources: job.Resources, Accels: 0xff,
		})
	}
	tokens := []string{"secret-token-0-abcdef", "secret-token-1-abcdef"}

	t.Run("gang", func(t *testing.T) {
		// The launch names the gang: the first Pod waits unbound until
		// its sibling exists, then both are bound.
		gang := []structs.TaskID{tasks[0].ID, tasks[1].ID}
		launch := func(i int) backend.Launch {
			return backend.Launch{Task: tasks[i], Job: job, Token: tokens[i], Gang: gang, GangWhole: true}
		}
		require.NoError(t, b.Start(launch(0)))
		first, err := c.Coordinator.CoreV1().Pods(ns).Get(ctx, kube.PodName(tasks[0].ID), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, first.Spec.NodeName, "not bound before its gang is complete")
		require.NoError(t, b.Start(launch(1)))
		// A retried Start finds its Pod: success, nothing new.
		require.NoError(t, b.Start(launch(0)))

		nodes := map[string]bool{}
		for i, task := range tasks {
			name := kube.PodName(task.ID)
			assert.Equal(t, strings.ToLower(string(task.ID))+"-", name[:len(task.ID)+1], "pod name from the task ID")
			p := c.WaitPodPhase(t, ns, name, corev1.PodRunning)
			nodes[p.Spec.NodeName] = true
			assert.Equal(t, string(task.Node), p.Spec.NodeName)
			assert.Equal(t, "atom-high", p.Spec.PriorityClassName)
			require.NotNil(t, p.Spec.Priority)
			assert.EqualValues(t, 100000, *p.Spec.Priority)
			assert.Equal(t, corev1.RestartPolicyNever, p.Spec.RestartPolicy)
			require.NotNil(t, p.Spec.TerminationGracePeriodSeconds)
			assert.EqualValues(t, 20, *p.Spec.TerminationGracePeriodSeconds)

			assert.Equal(t, map[string]string{"atom.io/managed-by": "atom", "atom.io/cluster": "k8s", "atom.io/job": "j-Gang1"}, p.Labels)
			assert.Equal(t, map[string]string{"atom.io/job": "j-Gang1", "atom.io/task": string(task.ID),
				"atom.io/allocation": p.Annotations["atom.io/allocation"]}, p.Annotations)
			assert.Len(t, p.Annotations["atom.io/allocation"], 16)

			require.Len(t, p.Spec.Containers, 1)
			ct := p.Spec.Containers[0]
			assert.Equal(t, "atom/cuda:test", ct.Image)
			assert.Equal(t, []string{"/app/atom"}, ct.Command)
			assert.Equal(t, []string{"run", "--grace", "20s", "--", "python", "train.py", "--epochs", "3"}, ct.Args)
			want := corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("64"),
				corev1.ResourceMemory: resource.MustParse("512Gi"),
				"nvidia.com/gpu":      resource.MustParse("8"),
			}
			for k, v := range want {
				got := ct.Resources.Requests[k]
				assert.True(t, v.Equal(got), "request %s: %s", k, got.String())
				assert.True(t, v.Equal(ct.Resources.Limits[k]), "limit %s", k)
			}
			assert.Len(t, ct.Resources.Requests, 3)
			assert.Len(t, ct.Resources.Limits, 3)

			// What the Pod carries: atom's way to the coordinator, where
			// it gets the rest.
			e := env(t, ct, nil)
			for k, v := range map[string]string{"ATOM_COORDINATOR": "http://coord-0:8080,http://coord-1:8080",
				"ATOM_TASK_ID": string(task.ID), "ATOM_TOKEN_FILE": kube.TokenPath, "ATOM_TLS_CA": testCA} {
				assert.Equal(t, v, e[k].Value, k)
			}
			assert.NotContains(t, e, "ATOM_JOB_SPEC")
			e = env(t, ct, b.LaunchEnv(task, job))
			for k, v := range map[string]string{
				"ATOM_COORDINATOR": "http://coord-0:8080,http://coord-1:8080", "ATOM_JOB_ID": "j-Gang1", "ATOM_JOB_KIND": "mpi",
				"ATOM_TASK_ID": string(task.ID), "ATOM_REPLICA": []string{"0", "1"}[i], "ATOM_REPLICAS": "2", "ATOM_ATTEMPT": "1",
				"ATOM_NODE": string(task.Node), "ATOM_ACCEL_TYPE": "A100", "ATOM_ACCELERATORS": "0,1,2,3,4,5,6,7",
				"ATOM_CPU_MILLI": "64000", "ATOM_MEMORY_BYTES": "549755813888", "ATOM_HEARTBEAT": "5s",
				"ATOM_LAUNCH_LISTEN": "0.0.0.0:7077", "WANDB_MODE": "offline", "ATOM_TLS_CA": testCA,
				"ATOM_POD_NAME": p.Name, "ATOM_NAMESPACE": p.Namespace,
			} {
				assert.Equal(t, v, e[k].Value, k)
			}
			var spec structs.Job
			require.NoError(t, json.Unmarshal([]byte(e["ATOM_JOB_SPEC"].Value), &spec))
			assert.Equal(t, job.Command, spec.Command)
			require.NotNil(t, e["ATOM_POD_IP"].ValueFrom)
			require.NotNil(t, e["ATOM_POD_IP"].ValueFrom.FieldRef)
			assert.Equal(t, "status.podIP", e["ATOM_POD_IP"].ValueFrom.FieldRef.FieldPath)
			// A small Pod: the job's variable, atom's packed in one, the IP.
			var names []string
			for _, v := range ct.Env {
				names = append(names, v.Name)
			}
			assert.Equal(t, []string{"WANDB_MODE", structs.TaskEnvVar, "ATOM_POD_IP"}, names)
			// The token: never in the Pod, nor in any Secret; atom exchanges
			// the projected service-account token bound to the Pod.
			assert.NotContains(t, e, "ATOM_TOKEN")
			assert.Equal(t, kube.TokenPath, e["ATOM_TOKEN_FILE"].Value)
			assert.Equal(t, "default", p.Spec.ServiceAccountName)
			require.NotNil(t, p.Spec.AutomountServiceAccountToken)
			assert.False(t, *p.Spec.AutomountServiceAccountToken)
			assertTokenVolume(t, p)
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), tokens[i], "the token appears in the pod")
			assertNoSecrets(ctx, t, c, ns)

			ev := rec.wait(t, task.ID, structs.TaskRunning)
			assert.Equal(t, p.Status.PodIP+":7077", ev.Endpoint)
			assert.Equal(t, tokens[i], rec.token(task.ID), "reported with the task's token")
		}
		assert.Len(t, nodes, 2, "two distinct nodes")
		n := 0
		for _, e := range rec.snapshot() {
			if e.Task == tasks[0].ID && e.State == structs.TaskRunning {
				n++
			}
		}
		assert.Equal(t, 1, n, "Running reported once")
	})

	t.Run("stop", func(t *testing.T) {
		id := tasks[0].ID
		require.NoError(t, b.Stop(backend.Halt{Task: id, Grace: 3 * time.Second}))
		require.Eventually(t, func() bool {
			_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(id), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 20*time.Second, 50*time.Millisecond, "stopped pod goes away")
		ev := rec.wait(t, id, structs.TaskFailed)
		assert.Equal(t, "pod deleted by atom", ev.Message)
		for _, e := range rec.snapshot() {
			assert.False(t, e.Task == id && e.State == structs.TaskLost, "a stopped task is not lost")
		}
		// Stopping it again, its Pod gone, is success.
		require.NoError(t, b.Stop(backend.Halt{Task: id, Grace: time.Second}))
	})

	t.Run("deleted-by-hand", func(t *testing.T) {
		id := tasks[1].ID
		zero := int64(0)
		require.NoError(t, c.Admin.CoreV1().Pods(ns).Delete(ctx, kube.PodName(id), metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		ev := rec.wait(t, id, structs.TaskLost)
		assert.Contains(t, ev.Message, "deleted outside atom")
	})

	// A job with a cache section on a cluster with a cache Redis: atom
	// gets the Redis address (REDIS_HOST/PORT for the job), /dev/fuse and
	// CAP_SYS_ADMIN to mount it; a job without one gets none of these.
	t.Run("cache", func(t *testing.T) {
		cb, err := kube.New(ctx, kube.Config{Cluster: "k8s", Client: c.Coordinator, Namespace: ns,
			Coordinator: "http://coord-0:8080", Redis: "redis.atom-system:6379"}, rec)
		require.NoError(t, err)
		defer cb.Close()
		cj := &structs.Job{ID: "j-cache", Name: "read", Kind: structs.KindCommand, Owner: "alice", Priority: structs.PriorityNormal,
			Image: "atom/cpu:test", Command: []string{"cat", "/mnt/cache/lidar/f0"}, Replicas: 1,
			Resources: structs.Resources{MilliCPU: 1000, Memory: 1 << 30}, CacheMountPath: "/mnt/cache", Datasets: []string{"lidar"}}
		ct := &structs.Task{ID: structs.MakeTaskID(cj.ID, 0, 0), Job: cj.ID, Node: "cpu-a", Priority: cj.Priority,
			State: structs.TaskScheduled, Resources: cj.Resources}
		require.NoError(t, cb.Start(backend.Launch{Task: ct, Job: cj, Token: "secret-token-c-abcdef"}))
		p := c.WaitPodPhase(t, ns, kube.PodName(ct.ID), corev1.PodRunning)
		e := env(t, p.Spec.Containers[0], cb.LaunchEnv(ct, cj))
		assert.Equal(t, "redis.atom-system:6379", e["ATOM_CACHE_REDIS"].Value)
		assert.Equal(t, "redis.atom-system", e["REDIS_HOST"].Value)
		assert.Equal(t, "6379", e["REDIS_PORT"].Value)
		sc := p.Spec.Containers[0].SecurityContext
		require.NotNil(t, sc)
		assert.Equal(t, []corev1.Capability{"SYS_ADMIN"}, sc.Capabilities.Add)
		assert.Nil(t, sc.Privileged, "not privileged")
		var fuse *corev1.Volume
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == "fuse" {
				fuse = &p.Spec.Volumes[i]
			}
		}
		require.NotNil(t, fuse)
		assert.Equal(t, "/dev/fuse", fuse.HostPath.Path)
		assert.Equal(t, corev1.HostPathCharDev, *fuse.HostPath.Type)

		// Without a cache section: none of it.
		plain := *cj
		plain.ID, plain.CacheMountPath, plain.Datasets = "j-plain", "", nil
		pt := *ct
		pt.ID, pt.Job = structs.MakeTaskID(plain.ID, 0, 0), plain.ID
		require.NoError(t, cb.Start(backend.Launch{Task: &pt, Job: &plain, Token: "secret-token-p-abcdef"}))
		pp := c.WaitPodPhase(t, ns, kube.PodName(pt.ID), corev1.PodRunning)
		assert.NotContains(t, env(t, pp.Spec.Containers[0], cb.LaunchEnv(&pt, &plain)), "ATOM_CACHE_REDIS")
		assert.Nil(t, pp.Spec.Containers[0].SecurityContext)
		for _, id := range []structs.TaskID{ct.ID, pt.ID} {
			require.NoError(t, cb.Stop(backend.Halt{Task: id, Grace: time.Second}))
		}
	})

	t.Run("nodes", func(t *testing.T) {
		list, err := c.Coordinator.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		byName := map[string]*corev1.Node{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		a := kube.NodeFromK8s(byName["gpu-a"], "k8s")
		assert.Equal(t, structs.NodeID("gpu-a"), a.Name)
		assert.Equal(t, structs.ClusterID("k8s"), a.Cluster)
		assert.Equal(t, structs.NodeReady, a.State)
		assert.Equal(t, structs.Resources{MilliCPU: 96000, Memory: 1024 << 30, AccelType: "A100", Accels: 8}, a.Capacity)
		assert.Equal(t, "ib", a.Tags["fabric"])
		assert.Equal(t, "A100", a.Tags["nvidia.com/gpu.product"])
		assert.Empty(t, a.Taints)

		gb := kube.NodeFromK8s(byName["gpu-b"], "k8s")
		assert.Equal(t, []corev1.Taint{special}, gb.Taints)
		assert.Equal(t, structs.NodeReady, gb.State)

		cpu := kube.NodeFromK8s(byName["cpu-a"], "k8s")
		assert.Equal(t, structs.Resources{MilliCPU: 32000, Memory: 128 << 30}, cpu.Capacity)

		// NodeSync follows them: the three, then gpu-b NotReady, then
		// cpu-a deleted.
		var mu sync.Mutex
		got := map[structs.NodeID]*structs.Node{}
		var removed []structs.NodeID
		apply := func(_ context.Context, cmd state.Command) error {
			mu.Lock()
			defer mu.Unlock()
			switch x := cmd.(type) {
			case *state.NodeUpsert:
				got[x.Node.Name] = x.Node
			case *state.NodeRemove:
				removed = append(removed, x.Name)
				delete(got, x.Name)
			}
			return nil
		}
		s, err := kube.NewNodeSync(ctx, b, 0, apply, nil)
		require.NoError(t, err)
		defer s.Close()
		check := func(cond func() bool, msg string) {
			t.Helper()
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return cond() }, 20*time.Second, 20*time.Millisecond, msg)
		}
		check(func() bool { return len(got) == 3 }, "three nodes upserted")

		require.NoError(t, c.StopNode(ctx, "gpu-b"))
		check(func() bool { return got["gpu-b"] != nil && got["gpu-b"].State == structs.NodeNotReady }, "gpu-b not-ready")
		mu.Lock()
		assert.Equal(t, structs.NodeReady, got["gpu-a"].State)
		mu.Unlock()
		// The Node as the API server has it now converts the same way.
		nb, err := c.Coordinator.CoreV1().Nodes().Get(ctx, "gpu-b", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, structs.NodeNotReady, kube.NodeFromK8s(nb, "k8s").State)

		require.NoError(t, c.Admin.CoreV1().Nodes().Delete(ctx, "cpu-a", metav1.DeleteOptions{}))
		check(func() bool { return slices.Contains(removed, "cpu-a") && got["cpu-a"] == nil }, "cpu-a removed")
	})
}
