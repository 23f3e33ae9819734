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
//
// Programs without a testing.T (test/benchnode, test/benchspark) start
// the same with New and stop it with Close.
package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/cli"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
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
	// Name is the control plane's (k8stest.Options.Name); default k8s.
	Name string
	// Node is the real node's: a CPU node (CPU-only jobs run only on
	// nodes without accelerators) unless it has GPUs (model A100 unless
	// set; simulated: the node has no devices).
	Node k8stest.RealNodeOptions
	// Images are images/ names (cpu, openmpi, spark) built if out of
	// date and imported into the node; the first is the default task
	// image (KubeImage). Default: cpu.
	Images []string
	// Namespaces are made besides Namespace (for Pods of others than the
	// coordinator: kube-scheduler's, say).
	Namespaces []string
	// Quota is user:dev's quota spec; default: 64 A100, 64 cpu, 256Gi.
	Quota string
	// Redis is the cluster's dataset cache (host:port as Pods reach it).
	Redis string
	// SimulatedGPUFaults are the node's simulated GPU faults for atom's
	// preflight to find (INDEX:ecc or INDEX:retired-pages, comma-separated).
	SimulatedGPUFaults string
	// HeartbeatTTL (default 10s), Cycle (default 100ms), NodeGrace
	// (default 40s), StopGrace (default 5s) and KeepFinished (default 1h)
	// are the coordinator's.
	HeartbeatTTL, Cycle, NodeGrace, StopGrace, KeepFinished time.Duration
	// Logger is the coordinator's; default: everything, into Env.Log.
	Logger *slog.Logger
	// Logf receives progress lines (the control plane's, the images');
	// Start sets it to t.Logf, New discards them when nil.
	Logf func(format string, args ...any)
}

// Env is a started cluster, node and coordinator.
type Env struct {
	Cluster *k8stest.Cluster
	Node    *k8stest.RealNode
	Daemon  *daemon.Daemon
	*client.Client
	// Log is everything the coordinator logged (empty when
	// Options.Logger is set).
	Log *testlog.Buffer
	// Images maps each image name of Options.Images to its reference.
	Images map[string]string
	// Imported has each image of Options.Images as it was found or built
	// and how long its import into the node took.
	Imported map[string]Image

	closers  []func() error // Close runs them last to first
	stopOnce sync.Once
	stopErr  error
}

// Image is an image of Options.Images: imagestest.EnsureImage's account
// of it, and how long the node took to import it.
type Image struct {
	imagestest.Image
	Import time.Duration
}

// Start starts everything Options ask for; the test's cleanup stops it,
// printing the coordinator's log (and the control plane's and node's
// last log lines) first when the test failed.
func Start(t *testing.T, o Options) *Env {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	e := &Env{}
	err := e.start(context.Background(), o, t)
	// After the cluster's and node's cleanups, so before them.
	t.Cleanup(func() {
		if t.Failed() && e.Log != nil {
			t.Logf("coordinator log:\n%s", e.Log.String())
		}
		if err := e.Close(); err != nil {
			t.Errorf("nodetest: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	return e
}

// New is Start for programs without a testing.T (test/benchnode,
// test/benchspark): it waits for the machine's real-node lock within ctx;
// the caller must Close the Env.
func New(ctx context.Context, o Options) (*Env, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	e := &Env{}
	if err := e.start(ctx, o, nil); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// start builds the images, starts the cluster and the node (for t, whose
// cleanups then stop them, when t is not nil), imports the images and
// starts the coordinator. What it started is closed by Close.
func (e *Env) start(ctx context.Context, o Options, t testing.TB) error {
	if o.Node.GPUs > 0 && o.Node.GPUModel == "" {
		o.Node.GPUModel = "A100"
	}
	if len(o.Images) == 0 {
		o.Images = []string{"cpu"}
	}
	if o.Quota == "" {
		o.Quota = "scope: user:dev\nlimits: {gpu/A100: 64, cpu: 64, memory: 256Gi}\n"
	}
	e.Images, e.Imported, e.Log = map[string]string{}, map[string]Image{}, &testlog.Buffer{}
	for _, name := range o.Images {
		img, err := imagestest.EnsureImage(name)
		if err != nil {
			return fmt.Errorf("image %s: %w", name, err)
		}
		o.Logf("image %s: %s in %s (built=%t, %.1fs)", name, img.Ref, img.Archive, img.Built, img.Seconds)
		e.Imported[name] = Image{Image: img}
	}

	var err error
	copts := k8stest.Options{Name: o.Name, Logf: o.Logf}
	if t != nil {
		e.Cluster = k8stest.Start(t, copts)
	} else {
		if e.Cluster, err = k8stest.New(ctx, copts); err != nil {
			return err
		}
		e.closers = append(e.closers, e.Cluster.Close)
	}
	if err := prepare(ctx, e.Cluster, o.Namespaces); err != nil {
		return fmt.Errorf("cluster %s: %w", e.Cluster.Name, err)
	}
	if t != nil {
		e.Node = e.Cluster.AddRealNode(t, o.Node)
	} else {
		if e.Node, err = e.Cluster.NewRealNode(ctx, o.Node); err != nil {
			return fmt.Errorf("cluster %s: real node: %w", e.Cluster.Name, err)
		}
		e.closers = append(e.closers, e.Node.Close)
	}
	for _, name := range o.Images {
		img := e.Imported[name]
		start := time.Now()
		ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err := e.Node.Import(ictx, img.Archive, img.Ref)
		cancel()
		if err != nil {
			return fmt.Errorf("real node %s: %w", e.Node.Name, err)
		}
		img.Import = time.Since(start)
		o.Logf("image %s imported into the node in %.1fs", img.Ref, img.Import.Seconds())
		e.Imported[name], e.Images[name] = img, img.Ref
	}

	if o.Node.GPUs > 0 {
		// No devices: atom checks the GPUs it is given in its simulated mode.
		ann := map[string]string{kube.AnnotationSimulatedGPUs: "true"}
		if o.SimulatedGPUFaults != "" {
			ann[kube.AnnotationSimulatedGPUFaults] = o.SimulatedGPUFaults
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if _, err := e.Cluster.Admin.CoreV1().Nodes().Patch(ctx, e.Node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("annotate node %s: %w", e.Node.Name, err)
		}
	}
	return e.startCoordinator(ctx, o)
}

// startCoordinator starts a one-server coordinator whose kubernetes
// cluster is e's, listening on the node's bridge (where Pods reach the
// host), and waits until it has the node, Ready.
func (e *Env) startCoordinator(ctx context.Context, o Options) error {
	quota, err := structs.ParseQuotaSpec([]byte(o.Quota))
	if err != nil {
		return err
	}
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + AdminToken + ", admin: true}\n"))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "atom-nodetest-")
	if err != nil {
		return err
	}
	e.closers = append(e.closers, func() error { return os.RemoveAll(dir) })
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(e.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cc := &structs.ClusterConfig{Quotas: []structs.Quota{*quota}, Clusters: []structs.Cluster{{Name: Cluster, Backend: "kubernetes",
		Kubeconfig: e.Cluster.CoordinatorKubeconfig, Namespace: Namespace, Redis: o.Redis}}}
	kf, err := keyring.Generate("k1")
	if err != nil {
		return err
	}
	kr, err := keyring.Parse(kf)
	if err != nil {
		return err
	}
	cfg := daemon.Config{HTTPAddr: e.Node.Gateway + ":0", Tokens: tf, Keyring: kr, KubeImage: e.Images[o.Images[0]],
		KubeNodeGrace: o.NodeGrace, KubeSweep: time.Second, KubeKeepFinished: o.KeepFinished,
		Logger: logger, Cluster: cc}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true,
		HeartbeatTTL: or(o.HeartbeatTTL, 10*time.Second), Cycle: or(o.Cycle, 100*time.Millisecond), StopGrace: or(o.StopGrace, 5*time.Second)}
	if e.Daemon, err = daemon.Start(cfg); err != nil {
		return err
	}
	e.closers = append(e.closers, e.StopCoordinator)
	e.Client = client.New(e.Daemon.URL, AdminToken)
	return poll(ctx, time.Minute, "the coordinator has no Ready node", func() error {
		nodes, err := e.Nodes(ctx)
		if err == nil && (len(nodes) != 1 || nodes[0].State != structs.NodeReady) {
			err = fmt.Errorf("%d nodes", len(nodes))
		}
		return err
	})
}

// StderrLogger is a coordinator's Logger for programs: text on stderr at
// the level environment variable env names (debug, info, warn), errors
// only when it is unset.
func StderrLogger(env string) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(os.Getenv(env))); err != nil {
		lvl = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// StopCoordinator stops the coordinator (once: later calls, Close's
// included, return the first one's error).
func (e *Env) StopCoordinator() error {
	e.stopOnce.Do(func() { e.stopErr = e.Daemon.Close() })
	return e.stopErr
}

// Close stops what New started: the coordinator, the node (its teardown
// stops every container and leaves the machine as it was) and the
// control plane, and removes the coordinator's data. Under Start it stops
// the coordinator only: the test's cleanups stop the rest.
func (e *Env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// poll calls f every 50ms until it returns nil, for up to limit within ctx.
func poll(ctx context.Context, limit time.Duration, what string, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v: %w", what, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// prepare applies the coordinator's RBAC and priority classes, makes the
// jobs' namespace (and namespaces), Spark drivers' service account, and
// waits until the coordinator may list Pods.
func prepare(ctx context.Context, c *k8stest.Cluster, namespaces []string) error {
	for _, f := range []string{"deploy/rbac.yaml", "deploy/priorityclasses.yaml"} {
		data, err := os.ReadFile(RepoFile(f))
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = c.ApplyYAML(actx, nil, data)
		cancel()
		if err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
	}
	for _, ns := range append([]string{Namespace}, namespaces...) {
		nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.EnsureNamespace(nctx, ns)
		cancel()
		if err != nil {
			return err
		}
	}
	_, err := c.Admin.CoreV1().ServiceAccounts(Namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: structs.DefaultSparkServiceAccount, Namespace: Namespace}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if err := ConfigsRBAC(ctx, c); err != nil {
		return err
	}
	return poll(ctx, 10*time.Second, "the coordinator may not list Pods (deploy/rbac.yaml)", func() error {
		_, err := c.Coordinator.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
		return err
	})
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
