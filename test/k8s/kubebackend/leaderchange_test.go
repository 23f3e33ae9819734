package kubebackend_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/testlog"
)

// trio starts coordinator servers of one Raft cluster against API server
// c, every one driving it (as a StatefulSet's would), on demand: s1
// bootstraps, the others join it.
type trio struct {
	t     *testing.T
	c     *k8stest.Cluster
	cc    *structs.ClusterConfig
	tf    api.TokenFile
	peers map[string]string // server ID → HTTP URL
	addrs map[string]string // server ID → HTTP listen address
	ttl   time.Duration
	grace time.Duration
	logs  *testlog.Buffer
	ds    map[string]*daemon.Daemon
}

func newTrio(t *testing.T, c *k8stest.Cluster, ttl, grace time.Duration) *trio {
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	quota, err := structs.ParseQuotaSpec([]byte("scope: user:dev\nlimits: {gpu/A100: 256, cpu: 10000, memory: 1000Ti}\n"))
	require.NoError(t, err)
	tr := &trio{t: t, c: c, tf: tf, ttl: ttl, grace: grace, logs: &testlog.Buffer{}, ds: map[string]*daemon.Daemon{},
		peers: map[string]string{}, addrs: map[string]string{},
		cc: &structs.ClusterConfig{Quotas: []structs.Quota{*quota}, Clusters: []structs.Cluster{{Name: "k8s", Backend: "kubernetes",
			Kubeconfig: c.CoordinatorKubeconfig, Namespace: ns}}}}
	for _, id := range []string{"s1", "s2", "s3"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		tr.addrs[id] = ln.Addr().String()
		require.NoError(t, ln.Close())
		tr.peers[id] = "http://" + tr.addrs[id]
	}
	return tr
}

// start starts server id and waits until it has the cluster's nodes.
func (tr *trio) start(id string) *coordinator {
	t := tr.t
	t.Helper()
	cfg := daemon.Config{HTTPAddr: tr.addrs[id], Peers: tr.peers, Secret: "cluster-secret", Tokens: tr.tf,
		KubeImage: "atom/cpu:test", KubeHeartbeatPods: true, KubeNodeGrace: tr.grace, KubeSweep: 200 * time.Millisecond,
		Logger:  slog.New(slog.NewTextHandler(tr.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("server", id),
		Cluster: tr.cc}
	cfg.Server = server.Config{ID: id, RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: id == "s1",
		HeartbeatTTL: tr.ttl, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	if id != "s1" {
		cfg.Server.Join = []string{tr.peers["s1"]}
	}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	tr.ds[id] = d
	t.Cleanup(func() { tr.stop(id) })
	list, err := tr.c.Admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n := 0
		d.Server.Read(func(s *state.State) { n = len(s.Nodes) })
		return n == len(list.Items)
	}, 30*time.Second, 50*time.Millisecond, "server %s has the cluster's %d nodes", id, len(list.Items))
	return &coordinator{Client: client.New(d.URL, adminToken), d: d, log: tr.logs}
}

// stop closes server id, once.
func (tr *trio) stop(id string) {
	if d := tr.ds[id]; d != nil {
		delete(tr.ds, id)
		require.NoError(tr.t, d.Close())
	}
}

// crashBeforeBind is the backend of a leader that dies between creating a
// gang's Pods and binding them: it starts tasks through its own kube
// backend (the launch's gang is the job's tasks, so its Pods wait unbound
// for their siblings) but never the replica skip names.
type crashBeforeBind struct {
	kb   *kube.Backend
	skip func(*structs.Task, *structs.Job) bool
}

func (b crashBeforeBind) Start(l backend.Launch) error {
	if b.skip(l.Task, l.Job) {
		return nil
	}
	return b.kb.Start(l)
}

func (crashBeforeBind) Capabilities() backend.Capabilities { return backend.Capabilities{} }

func (b crashBeforeBind) Stop(h backend.Halt) error { return b.kb.Stop(h) }

type discard struct{}

func (discard) Report(structs.TaskID, string, structs.TaskEvent) error { return nil }

// follower is the host of a backend on a server that does not lead and
// whose state knows no task: the backend starts and stops what it is
// told, and leaves the sweep, executor Pods and node graces to the
// leader's.
type follower struct{}

func (follower) Task(structs.TaskID) (string, bool) { return "", false }
func (follower) IsLeader() bool                     { return false }
func (follower) LeadingSince() (time.Time, bool)    { return time.Time{}, false }
func (follower) HeartbeatTTL() time.Duration        { return 0 }
func (follower) KeepConfigs() map[string]bool       { return nil }
func (follower) ExecutorPod(structs.TaskID) string  { return "" }
func (follower) Configs(t *structs.Task, _ *structs.Job) ([]taskenv.Config, error) {
	return nil, fmt.Errorf("task %s: no configs on a follower", t.ID)
}
func (follower) TakeExecutor(context.Context, kube.ExecutorRequest) (structs.TaskID, structs.NodeID, error) {
	return "", "", errors.New("not the leader")
}
func (follower) ExecutorOf(structs.JobID, string) (structs.TaskID, structs.NodeID, bool) {
	return "", "", false
}

// TestLeaderChange (C20 on Kubernetes): three coordinator servers; the
// leader dies after creating two of a 3-Pod gang's Pods, unbound, and
// before creating the third. The new leader adopts the gang: it creates
// the third Pod and binds all three (none before all exist), the same
// tasks and Pods, no restart. A task on a node that went NotReady long
// before the new leader started is lost by the NotReady grace counted
// from the node's Ready lastTransitionTime, not from when the new leader
// saw it, and still only once the new leader has led for a heartbeat TTL.
// Only the leader follows Nodes into the state.
func TestLeaderChange(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t,
		k8stest.NodeSpec{Name: "gpu-1", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-2", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "gpu-3", GPUs: 8, GPUModel: "A100"},
		k8stest.NodeSpec{Name: "cpu-1", CPU: "16", Memory: "64Gi"},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ttl, grace, down = 15 * time.Second, 5 * time.Minute, 10 * time.Minute
	tr := newTrio(t, c, ttl, grace)
	s1 := tr.start("s1")
	require.Eventually(t, s1.d.Server.IsLeader, 10*time.Second, 20*time.Millisecond)
	kb, err := kube.New(ctx, kube.Config{Cluster: "k8s", Client: c.Coordinator, Namespace: ns, Image: "atom/cpu:test",
		Coordinator: s1.d.URL, Heartbeat: 5 * time.Second, Host: follower{}}, discard{})
	require.NoError(t, err)
	closeKB := sync.OnceFunc(kb.Close)
	t.Cleanup(closeKB)
	s1.d.Server.SetBackend(crashBeforeBind{kb: kb, skip: func(t *structs.Task, j *structs.Job) bool { return j.Name == "allreduce" && t.Index == 2 }})

	// A service replica on the only CPU node, which then goes NotReady:
	// its kubelet went silent ten minutes ago, as the node lifecycle
	// controller wrote. s1 sees it go now, so its grace would end in five
	// minutes.
	web := s1.submit(t, "kind: service\nname: web\nreplicas: 1\ncommand: [serve]\nresources: {cpu: \"1\", memory: 1Gi}\n")
	_, webTasks := s1.waitJob(t, web, "runs", func(j *structs.Job, ts []*structs.Task) bool { return len(running(ts)) == 1 })
	webPod := c.WaitPodPhase(t, ns, kube.PodName(webTasks[0].ID), corev1.PodRunning)
	require.Equal(t, "cpu-1", webPod.Spec.NodeName)
	require.NoError(t, c.StopNode(ctx, "cpu-1"))
	n, err := c.Admin.CoreV1().Nodes().Get(ctx, "cpu-1", metav1.GetOptions{})
	require.NoError(t, err)
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(time.Now().Add(-down))
		}
	}
	_, err = c.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	// s2 and s3 start now, the node already down.
	s2 := tr.start("s2")
	tr.start("s3")

	// The gang: s1 creates two of its three Pods, unbound, and dies.
	pw := watchPods(t, c)
	gang := s1.submit(t, "kind: mpi\nname: allreduce\ncommand: [python, allreduce.py]\nreplicas: 3\nresources: {accelerators: {type: A100, count: 8}}\n")
	var before []corev1.Pod
	require.Eventually(t, func() bool {
		before = pods(t, c, gang)
		return len(before) == 2
	}, 30*time.Second, 20*time.Millisecond, "s1 creates two of the gang's Pods")
	for _, p := range before {
		require.Empty(t, p.Spec.NodeName, "pod %s is not bound", p.Name)
	}
	placed := map[structs.TaskID]structs.NodeID{}
	for _, d := range tr.ds {
		require.Eventually(t, func() bool {
			d.Server.Read(func(s *state.State) {
				for _, x := range s.TasksOf(gang) {
					placed[x.ID] = x.Node
				}
			})
			return len(placed) == 3
		}, 10*time.Second, 20*time.Millisecond, "every server has the gang's tasks")
	}
	closedAt := time.Now()
	tr.stop("s1")
	closeKB()

	// The new leader binds the gang: the third Pod created, then all three
	// bound to the nodes the state placed them on.
	j, tasks := s2.waitJob(t, gang, "runs", func(j *structs.Job, ts []*structs.Task) bool { return len(running(ts)) == 3 })
	assert.Equal(t, 0, j.Attempt, "the first attempt")
	assert.Equal(t, 0, j.LostUnstarted, "not requeued")
	require.Len(t, tasks, 3, "the same allocations, none placed again")
	uids := map[string]bool{}
	for _, p := range before {
		uids[string(p.UID)] = true
	}
	nodes := map[string]bool{}
	kept := 0
	for _, task := range tasks {
		assert.Equal(t, placed[task.ID], task.Node, "task %s is one s1 placed, on the same node", task.ID)
		p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, kube.PodName(task.ID), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, string(task.Node), p.Spec.NodeName)
		nodes[p.Spec.NodeName] = true
		if uids[string(p.UID)] {
			kept++
		}
	}
	assert.Len(t, nodes, 3)
	assert.Equal(t, 2, kept, "the two Pods s1 created are the ones bound")
	created := map[string]bool{}
	for _, p := range pw.drain() {
		if p.Labels["atom.io/job"] != kube.LabelValue(string(gang)) {
			continue
		}
		created[p.Name] = true
		if p.Spec.NodeName != "" {
			assert.Len(t, created, 3, "pod %s bound before the gang's three Pods existed", p.Name)
		}
	}

	// Only the leader follows Nodes: s1 did, then the new leader; a
	// label put on a Node now reaches the state.
	var leader, follower string
	require.Eventually(t, func() bool {
		leader, follower = "", ""
		for id, d := range tr.ds {
			if d.Server.IsLeader() {
				leader = id
			} else {
				follower = id
			}
		}
		return leader != "" && follower != ""
	}, 10*time.Second, 20*time.Millisecond)
	_, err = c.Admin.CoreV1().Nodes().Patch(ctx, "gpu-1", types.MergePatchType, []byte(`{"metadata":{"labels":{"rack":"r9"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rack := ""
		s2.d.Server.Read(func(s *state.State) {
			if n := s.Nodes["gpu-1"]; n != nil {
				rack = n.Tags["rack"]
			}
		})
		return rack == "r9"
	}, 20*time.Second, 20*time.Millisecond, "the new leader follows the Node's labels")
	// NodeSync logs that it follows once its informers have synced, which
	// may be just after it has applied a change.
	require.Eventually(t, func() bool {
		return strings.Contains(tr.logs.String(), `msg="following kubernetes nodes" server=`+leader+" cluster=k8s")
	}, 20*time.Second, 20*time.Millisecond, "the new leader follows the Nodes")
	logs := tr.logs.String()
	assert.Contains(t, logs, `msg="following kubernetes nodes" server=s1 cluster=k8s`)
	assert.NotContains(t, logs, `msg="following kubernetes nodes" server=`+follower, "a follower does not watch Nodes")

	// The replica on the NotReady node: lost once the new leader has led
	// for a TTL, its grace long past by the node's transition time.
	var lost *structs.Task
	require.Eventually(t, func() bool {
		st, err := s2.Job(ctx, web)
		if err != nil {
			return false
		}
		for _, x := range st.Tasks {
			if x.ID == webTasks[0].ID && x.State == structs.TaskLost {
				lost = x
			}
		}
		return lost != nil
	}, 60*time.Second, 20*time.Millisecond, "the replica on cpu-1 is lost well before the new leader's own five minutes")
	assert.False(t, time.Now().Before(closedAt.Add(ttl)), "lost before the new leader led for a heartbeat TTL (C20)")
	m := regexp.MustCompile(`^lost: node cpu-1 has not been Ready for (\S+)$`).FindStringSubmatch(lost.Message)
	require.NotNil(t, m, lost.Message)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d, down, "counted from the node's lastTransitionTime")
	require.Eventually(t, func() bool {
		_, err := c.Admin.CoreV1().Pods(ns).Get(ctx, webPod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 50*time.Millisecond, "the Pod on the NotReady node is deleted")
}
