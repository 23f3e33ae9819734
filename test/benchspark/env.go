package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/client"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/images/imagestest"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// env is the control plane, the real node with the spark image, and a
// one-server coordinator on the node's bridge, as nodetest.Start makes
// them for tests.
type env struct {
	cluster  *k8stest.Cluster
	node     *k8stest.RealNode
	daemon   *daemon.Daemon
	client   *client.Client
	image    imagestest.Image
	imported time.Duration
	dir      string // the coordinator's data
}

const benchToken = "benchspark-admin-token-0123456789"

// start builds the spark image if it is out of date, starts the control
// plane, sets up the jobs' namespace as deploy/ does for Spark drivers,
// starts the real node (waiting for the machine's real-node lock),
// imports the image and starts the coordinator.
func start(ctx context.Context) (*env, error) {
	img, err := imagestest.EnsureImage("spark")
	if err != nil {
		return nil, fmt.Errorf("image spark: %w", err)
	}
	e := &env{image: img}
	e.cluster, err = k8stest.New(ctx, k8stest.Options{Name: "benchspark", Logf: logf})
	if err != nil {
		return nil, err
	}
	if err := e.prepare(ctx); err != nil {
		return nil, errors.Join(err, e.close())
	}
	e.node, err = e.cluster.NewRealNode(ctx, k8stest.RealNodeOptions{})
	if err != nil {
		return nil, errors.Join(err, e.close())
	}
	t0 := time.Now()
	if err := e.node.Import(ctx, img.Archive, img.Ref); err != nil {
		return nil, errors.Join(err, e.close())
	}
	e.imported = time.Since(t0)
	logf("image %s imported into the node in %.1fs", img.Ref, e.imported.Seconds())
	if err := e.startCoordinator(ctx); err != nil {
		return nil, errors.Join(err, e.close())
	}
	return e, nil
}

// prepare applies the coordinator's RBAC and priority classes, makes the
// jobs' namespace with the Spark drivers' service account and role, and
// waits until the coordinator may list Pods.
func (e *env) prepare(ctx context.Context) error {
	for _, f := range []string{"deploy/rbac.yaml", "deploy/priorityclasses.yaml"} {
		data, err := os.ReadFile(nodetest.RepoFile(f))
		if err != nil {
			return err
		}
		if _, err := e.cluster.ApplyYAML(ctx, nil, data); err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
	}
	if err := e.cluster.EnsureNamespace(ctx, nodetest.Namespace); err != nil {
		return err
	}
	_, err := e.cluster.Admin.CoreV1().ServiceAccounts(nodetest.Namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: structs.DefaultSparkServiceAccount, Namespace: nodetest.Namespace}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if err := nodetest.SparkDriverRBAC(ctx, e.cluster); err != nil {
		return err
	}
	for {
		_, err := e.cluster.Coordinator.CoreV1().Pods(nodetest.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the coordinator may not list Pods (deploy/rbac.yaml): %v: %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startCoordinator starts a one-server coordinator whose kubernetes
// cluster is this one, listening on the node's bridge, and waits until it
// has the node.
func (e *env) startCoordinator(ctx context.Context) error {
	quota, err := structs.ParseQuotaSpec([]byte("scope: user:dev\nlimits: {cpu: 64, memory: 256Gi}\n"))
	if err != nil {
		return err
	}
	tf, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + benchToken + ", admin: true}\n"))
	if err != nil {
		return err
	}
	if e.dir, err = os.MkdirTemp("", "benchspark-"); err != nil {
		return err
	}
	cc := &structs.ClusterConfig{Quotas: []structs.Quota{*quota}, Clusters: []structs.Cluster{{Name: nodetest.Cluster, Backend: "kubernetes",
		Kubeconfig: e.cluster.CoordinatorKubeconfig, Namespace: nodetest.Namespace}}}
	cfg := daemon.Config{HTTPAddr: e.node.Gateway + ":0", Tokens: tf, KubeImage: e.image.Ref, KubeSweep: time.Second,
		Logger: logger(), Cluster: cc}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: e.dir, Bootstrap: true,
		HeartbeatTTL: 10 * time.Second, Cycle: 100 * time.Millisecond, StopGrace: 5 * time.Second}
	if e.daemon, err = daemon.Start(cfg); err != nil {
		return err
	}
	e.client = client.New(e.daemon.URL, benchToken)
	for {
		nodes, err := e.client.Nodes(ctx)
		if err == nil && len(nodes) == 1 && nodes[0].State == structs.NodeReady {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the coordinator has no ready node: %v: %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// close stops the coordinator, the node (its teardown stops every
// container and leaves the machine as it was) and the control plane.
func (e *env) close() error {
	var errs []error
	if e.daemon != nil {
		errs = append(errs, e.daemon.Close())
	}
	if e.node != nil {
		errs = append(errs, e.node.Close())
	}
	if e.cluster != nil {
		errs = append(errs, e.cluster.Close())
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	return errors.Join(errs...)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(os.Getenv("BENCHSPARK_LOG"))); err != nil {
		lvl = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}
