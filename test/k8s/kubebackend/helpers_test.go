package kubebackend_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/cli"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/testlog"
)

// prepare applies the coordinator's RBAC and priority classes to c, makes
// the jobs' namespace and waits until the coordinator may list Pods.
func prepare(t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	c.ApplyFile(t, repoFile(t, "deploy/rbac.yaml"))
	c.ApplyFile(t, repoFile(t, "deploy/priorityclasses.yaml"))
	c.CreateNamespace(t, ns)
	// Spark drivers' service account (deploy/namespace-atom-jobs.yaml).
	_, err := c.Admin.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: structs.DefaultSparkServiceAccount, Namespace: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := c.Coordinator.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "RBAC takes effect")
}

// coordinator is one coordinator server driving the named clusters, as
// an admin client.
type coordinator struct {
	*client.Client
	d   *daemon.Daemon
	log *testlog.Buffer // everything the server logged
}

// keepFinished is how long the tests' coordinators keep a finished Pod for
// its log: long enough to see it kept, short enough to see it go.
const keepFinished = 3 * time.Second

// startCoordinator starts a one-server coordinator whose clusters are the
// given kubernetes clusters (by name), heartbeating for their Pods (no
// atom runs in kwok's), with ttl as the heartbeat TTL and grace as the
// NotReady grace; it waits until it has every Node.
func startCoordinator(t *testing.T, ttl, grace time.Duration, clusters map[string]*k8stest.Cluster) *coordinator {
	t.Helper()
	quota, err := structs.ParseQuotaSpec([]byte("scope: user:dev\nlimits: {gpu/A100: 256, cpu: 10000, memory: 1000Ti}\n"))
	require.NoError(t, err)
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cc := &structs.ClusterConfig{Quotas: []structs.Quota{*quota}}
	want := 0
	ctx := context.Background()
	for name, c := range clusters {
		cc.Clusters = append(cc.Clusters, structs.Cluster{Name: structs.ClusterID(name), Backend: "kubernetes",
			Kubeconfig: c.CoordinatorKubeconfig, Namespace: ns})
		list, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		want += len(list.Items)
	}
	logs := &testlog.Buffer{}
	kf, err := keyring.Generate("k1")
	require.NoError(t, err)
	kr, err := keyring.Parse(kf)
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tf, Keyring: kr, KubeImage: "atom/cpu:test", KubeHeartbeatPods: true,
		KubeNodeGrace: grace, KubeSweep: 200 * time.Millisecond, KubeKeepFinished: keepFinished,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Cluster: cc}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: ttl, Cycle: 50 * time.Millisecond, StopGrace: 2 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	cl := &coordinator{Client: client.New(d.URL, adminToken), d: d, log: logs}
	require.Eventually(t, func() bool {
		nodes, err := cl.Nodes(ctx)
		return err == nil && len(nodes) == want
	}, 30*time.Second, 50*time.Millisecond, "the coordinator has the clusters' %d nodes", want)
	return cl
}

// run runs the coordinator CLI against the server as the admin.
func (c *coordinator) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := cli.App()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), append([]string{"coordinator", "--addr", c.d.URL, "--token", adminToken}, args...))
	return out.String(), err
}

// cli is run that fails the test on an error.
func (c *coordinator) cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.run(t, args...)
	require.NoError(t, err, out)
	return out
}

// submit submits spec and returns the job's ID.
func (c *coordinator) submit(t *testing.T, spec string) structs.JobID {
	t.Helper()
	r, err := c.SubmitJob(context.Background(), []byte(spec), "")
	require.NoError(t, err)
	return r.JobID
}

// waitJob waits until job id satisfies cond and returns its status.
func (c *coordinator) waitJob(t *testing.T, id structs.JobID, what string, cond func(*structs.Job, []*structs.Task) bool) (*structs.Job, []*structs.Task) {
	t.Helper()
	var j *structs.Job
	var tasks []*structs.Task
	require.Eventually(t, func() bool {
		st, err := c.Job(context.Background(), id)
		if err != nil {
			return false
		}
		j, tasks = st.Job, st.Tasks
		return cond(j, tasks)
	}, 60*time.Second, 50*time.Millisecond, "job %s: %s; last %+v", id, what, j)
	return j, tasks
}

// running is the job's tasks that are Running.
func running(tasks []*structs.Task) []*structs.Task {
	var out []*structs.Task
	for _, x := range tasks {
		if x.State == structs.TaskRunning {
			out = append(out, x)
		}
	}
	return out
}

// podWatch records every version of every Pod in the namespace that the
// API server reports, from the moment it is made.
type podWatch struct {
	w    watch.Interface
	seen chan *corev1.Pod
}

func watchPods(t *testing.T, c *k8stest.Cluster) *podWatch {
	t.Helper()
	w, err := c.Admin.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	pw := &podWatch{w: w, seen: make(chan *corev1.Pod, 100000)}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				pw.seen <- p
			}
		}
		close(pw.seen)
	}()
	return pw
}

// drain returns the Pod versions seen so far.
func (pw *podWatch) drain() []*corev1.Pod {
	var out []*corev1.Pod
	for {
		select {
		case p, ok := <-pw.seen:
			if !ok {
				return out
			}
			out = append(out, p)
		default:
			return out
		}
	}
}

// pods lists the Pods of job id in c.
func pods(t *testing.T, c *k8stest.Cluster, id structs.JobID) []corev1.Pod {
	t.Helper()
	list, err := c.Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "atom.io/job=" + kube.LabelValue(string(id))})
	require.NoError(t, err)
	return list.Items
}

// exchange is what atom in task Pod p gets from coordinator co for the
// Pod's token (which the test asks cluster c for, as the kubelet would):
// the environment the Pod does not carry.
func exchange(ctx context.Context, t *testing.T, c *k8stest.Cluster, co *coordinator, p *corev1.Pod) map[string]string {
	t.Helper()
	exp := int64(kube.TokenExpiry)
	tr, err := c.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, p.Spec.ServiceAccountName, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences: []string{kube.TokenAudience}, ExpirationSeconds: &exp,
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tok, err := client.New(co.d.URL, "").TaskToken(ctx, structs.TaskID(p.Annotations[kube.LabelTask]), tr.Status.Token, "")
	require.NoError(t, err)
	require.NotEmpty(t, tok.Token)
	return tok.Env
}
