// Package nodetest runs a coordinator against a real Kubernetes node, for
// the tests of what atom does inside real containers: a test control
// plane (k8stest), one real node (kubelet, containerd) with the images of
// images/ imported, and a one-server coordinator whose kubernetes backend
// starts task Pods there with atom as their ENTRYPOINT. The coordinator
// listens on the node's bridge (k8stest.RealNodeGateway), the address
// Pods reach the host at, so atom in a Pod heartbeats and exchanges its
// token as it does on any cluster.
//
//	e := nodetest.Start(t, nodetest.Options{Images: []string{"cpu"}}) // a CPU node; Node: k8stest.RealNodeOptions{GPUs: 4} for GPUs
//	id := e.Submit(t, "kind: command\nname: hello\ncommand: [sh, -c, 'echo hi; exit 3']\n")
//	e.WaitJob(t, id, "ends", nodetest.Ended)
//	out := e.CLI(t, "job", "logs", string(id))
package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/cli"
	"github.com/atom-sched/atom/coordinator/client"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/images/imagestest"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/testlog"
)

// Namespace is where the coordinator makes task Pods.
const Namespace = "atom-jobs"

// Cluster is the kubernetes cluster's name in the coordinator.
const Cluster = "k8s"

// AdminToken is the token of the admin user "dev".
const AdminToken = "realnode-admin-token"

// Options say what to start.
type Options struct {
	// Node is the real node's: a CPU node (CPU-only jobs run only on
	// nodes without accelerators) unless it has GPUs (model A100 unless
	// set; simulated: the node has no devices).
	Node k8stest.RealNodeOptions
	// Images are images/ names (cpu, openmpi, spark) built if out of
	// date and imported into the node; the first is the default task
	// image (KubeImage). Default: cpu.
	Images []string
	// Quota is user:dev's quota spec; default: 64 A100, 64 cpu, 256Gi.
	Quota string
	// Redis is the cluster's dataset cache (host:port as Pods reach it).
	Redis string
	// SimulatedGPUFaults are the node's simulated GPU faults for atom's
	// preflight to find (INDEX:ecc or INDEX:retired-pages, comma-separated).
	SimulatedGPUFaults string
	// HeartbeatTTL (default 10s), NodeGrace (default 40s), StopGrace
	// (default 5s) and KeepFinished (default 1h) are the coordinator's.
	HeartbeatTTL, NodeGrace, StopGrace, KeepFinished time.Duration
}

// Env is a started cluster, node and coordinator.
type Env struct {
	Cluster *k8stest.Cluster
	Node    *k8stest.RealNode
	Daemon  *daemon.Daemon
	*client.Client
	// Log is everything the coordinator logged.
	Log *testlog.Buffer
	// Images maps each image name of Options.Images to its reference.
	Images map[string]string
}

// Start starts everything Options ask for; the test's cleanup stops it.
func Start(t *testing.T, o Options) *Env {
	t.Helper()
	if o.Node.GPUs > 0 && o.Node.GPUModel == "" {
		o.Node.GPUModel = "A100"
	}
	if len(o.Images) == 0 {
		o.Images = []string{"cpu"}
	}
	if o.Quota == "" {
		o.Quota = "scope: user:dev\nlimits: {gpu/A100: 64, cpu: 64, memory: 256Gi}\n"
	}
	e := &Env{Images: map[string]string{}}
	e.Cluster = k8stest.Start(t, k8stest.Options{})
	prepare(t, e.Cluster)
	e.Node = e.Cluster.AddRealNode(t, o.Node)
	for _, name := range o.Images {
		archive, ref := imagestest.Ensure(t, name)
		start := time.Now()
		e.Node.ImportImage(t, archive, ref)
		t.Logf("image %s imported into the node in %.1fs", ref, time.Since(start).Seconds())
		e.Images[name] = ref
	}

	if o.Node.GPUs > 0 {
		ann := map[string]string{kube.AnnotationSimulatedGPUs: "true"}
		if o.SimulatedGPUFaults != "" {
			ann[kube.AnnotationSimulatedGPUFaults] = o.SimulatedGPUFaults
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		_, err := e.Cluster.Admin.CoreV1().Nodes().Patch(context.Background(), e.Node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}

	quota, err := structs.ParseQuotaSpec([]byte(o.Quota))
	require.NoError(t, err)
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + AdminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cc := &structs.ClusterConfig{Quotas: []structs.Quota{*quota}, Clusters: []structs.Cluster{{Name: Cluster, Backend: "kubernetes",
		Kubeconfig: e.Cluster.CoordinatorKubeconfig, Namespace: Namespace, Redis: o.Redis}}}
	e.Log = &testlog.Buffer{}
	cfg := daemon.Config{HTTPAddr: e.Node.Gateway + ":0", Tokens: tf, KubeImage: e.Images[o.Images[0]],
		KubeNodeGrace: o.NodeGrace, KubeSweep: time.Second, KubeKeepFinished: o.KeepFinished,
		Logger:  slog.New(slog.NewTextHandler(e.Log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Cluster: cc}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: or(o.HeartbeatTTL, 10*time.Second), Cycle: 100 * time.Millisecond, StopGrace: or(o.StopGrace, 5*time.Second)}
	e.Daemon, err = daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("coordinator log:\n%s", e.Log.String())
		}
		_ = e.Daemon.Close()
	})
	e.Client = client.New(e.Daemon.URL, AdminToken)
	require.Eventually(t, func() bool {
		nodes, err := e.Nodes(context.Background())
		return err == nil && len(nodes) == 1 && nodes[0].State == structs.NodeReady
	}, 30*time.Second, 50*time.Millisecond, "the coordinator has the real node")
	return e
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// prepare applies the coordinator's RBAC and priority classes, makes the
// jobs' namespace and Spark drivers' service account, and waits until the
// coordinator may list Pods.
func prepare(t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	c.ApplyFile(t, RepoFile("deploy/rbac.yaml"))
	c.ApplyFile(t, RepoFile("deploy/priorityclasses.yaml"))
	c.CreateNamespace(t, Namespace)
	_, err := c.Admin.CoreV1().ServiceAccounts(Namespace).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: structs.DefaultSparkServiceAccount, Namespace: Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Pods(Namespace).List(context.Background(), metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "RBAC takes effect")
}

// RepoFile is the path of a file of the repository, by its path there.
func RepoFile(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

// Run runs the coordinator CLI against the server as the admin.
func (e *Env) Run(args ...string) (string, error) {
	var out bytes.Buffer
	app := cli.App()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), append([]string{"coordinator", "--addr", e.Daemon.URL, "--token", AdminToken}, args...))
	return out.String(), err
}

// CLI is Run that fails the test on an error.
func (e *Env) CLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.Run(args...)
	require.NoError(t, err, out)
	return out
}

// Submit submits spec and returns the job's ID.
func (e *Env) Submit(t *testing.T, spec string) structs.JobID {
	t.Helper()
	r, err := e.SubmitJob(context.Background(), []byte(spec), "")
	require.NoError(t, err)
	return r.JobID
}

// Ended is a WaitJob condition: the job has ended.
func Ended(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() }

// Running is a WaitJob condition: the job runs with every task Running.
func Running(j *structs.Job, tasks []*structs.Task) bool {
	if j.State != structs.JobRunning || len(tasks) == 0 {
		return false
	}
	for _, x := range tasks {
		if x.State != structs.TaskRunning {
			return false
		}
	}
	return true
}

// WaitJob waits (up to 2 minutes) until job id satisfies cond and
// returns its status.
func (e *Env) WaitJob(t *testing.T, id structs.JobID, what string, cond func(*structs.Job, []*structs.Task) bool) (*structs.Job, []*structs.Task) {
	t.Helper()
	var j *structs.Job
	var tasks []*structs.Task
	ok := assert.Eventually(t, func() bool {
		st, err := e.Job(context.Background(), id)
		if err != nil {
			return false
		}
		j, tasks = st.Job, st.Tasks
		return cond(j, tasks)
	}, 2*time.Minute, 100*time.Millisecond)
	if !ok {
		t.Fatalf("job %s: %s; last %s", id, what, describe(j, tasks))
	}
	return j, tasks
}

func describe(j *structs.Job, tasks []*structs.Task) string {
	if j == nil {
		return "none"
	}
	s := fmt.Sprintf("%s (%s)", j.State, j.Reason)
	for _, x := range tasks {
		s += fmt.Sprintf("; %s %s exit %d %s", x.ID, x.State, x.ExitCode, x.Message)
	}
	return s
}

// Pod is task id's Pod as the API server has it.
func (e *Env) Pod(t *testing.T, id structs.TaskID) (*corev1.Pod, error) {
	t.Helper()
	return e.Cluster.Admin.CoreV1().Pods(Namespace).Get(context.Background(), kube.PodName(id), metav1.GetOptions{})
}

// KubeletLogOnFailure prints the kubelet's log when t fails.
func (e *Env) KubeletLogOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(e.Node.KubeletLog()); err == nil {
				fmt.Fprintf(os.Stderr, "kubelet log (last 200 lines):\n%s\n", lastLines(string(b), 200))
			}
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
