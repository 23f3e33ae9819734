package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/test/images/imagestest"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// env is the control plane, the real node with the cpu image, and the
// namespaces both runs use.
type env struct {
	cluster  *k8stest.Cluster
	node     *k8stest.RealNode
	image    imagestest.Image
	imported time.Duration
}

// start builds the cpu image if it is out of date, starts the control
// plane and the real node (waiting for the machine's real-node lock),
// imports the image and marks the node's GPUs simulated for atom.
func start(ctx context.Context) (*env, error) {
	img, err := imagestest.EnsureImage("cpu")
	if err != nil {
		return nil, fmt.Errorf("image cpu: %w", err)
	}
	e := &env{image: img}
	e.cluster, err = k8stest.New(ctx, k8stest.Options{Name: "benchnode", Logf: logf})
	if err != nil {
		return nil, err
	}
	if err := e.prepare(ctx); err != nil {
		return nil, errors.Join(err, e.close())
	}
	e.node, err = e.cluster.NewRealNode(ctx, k8stest.RealNodeOptions{GPUs: *flagGPUs, GPUModel: gpuModel})
	if err != nil {
		return nil, errors.Join(err, e.close())
	}
	t0 := time.Now()
	if err := e.node.Import(ctx, img.Archive, img.Ref); err != nil {
		return nil, errors.Join(err, e.close())
	}
	e.imported = time.Since(t0)
	logf("image %s imported into the node in %.1fs", img.Ref, e.imported.Seconds())
	// No devices: atom checks the GPUs it is given in its simulated mode.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kube.AnnotationSimulatedGPUs: "true"}}})
	if _, err := e.cluster.Admin.CoreV1().Nodes().Patch(ctx, e.node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return nil, errors.Join(fmt.Errorf("annotate node %s: %w", e.node.Name, err), e.close())
	}
	return e, nil
}

// prepare applies the coordinator's RBAC and the priority classes, makes
// both namespaces and waits until the coordinator may list Pods.
func (e *env) prepare(ctx context.Context) error {
	for _, f := range []string{"deploy/rbac.yaml", "deploy/priorityclasses.yaml"} {
		data, err := os.ReadFile(filepath.Join(imagestest.RepoRoot(), f))
		if err != nil {
			return err
		}
		if _, err := e.cluster.ApplyYAML(ctx, nil, data); err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
	}
	for _, ns := range []string{atomNamespace, kubeNamespace} {
		if err := e.cluster.EnsureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	for {
		_, err := e.cluster.Coordinator.CoreV1().Pods(atomNamespace).List(ctx, metav1.ListOptions{})
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

// close stops the node (its teardown stops every container and leaves
// the machine as it was) and then the control plane.
func (e *env) close() error {
	var errs []error
	if e.node != nil {
		errs = append(errs, e.node.Close())
	}
	if e.cluster != nil {
		errs = append(errs, e.cluster.Close())
	}
	return errors.Join(errs...)
}
