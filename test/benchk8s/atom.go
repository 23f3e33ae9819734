package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/client"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/structs"
)

const benchToken = "benchk8s-admin-token-0123456789"

// runAtom is run 1: a coordinator with the cluster as its kubernetes
// backend places -tasks one-GPU jobs. It returns the timing and the shape
// of atom's task Pods, which run 2 copies.
func runAtom(ctx context.Context) (result, *podShape, error) {
	c, err := startCluster(ctx, "atom")
	if err != nil {
		return result{}, nil, err
	}
	defer c.Close()

	dir, err := os.MkdirTemp("", "benchk8s-")
	if err != nil {
		return result{}, nil, err
	}
	defer os.RemoveAll(dir)
	quota, err := structs.ParseQuotaSpec(fmt.Appendf(nil, "scope: user:bench\nlimits: {gpu/%s: %d, cpu: 1000000, memory: 10000Ti}\n",
		gpuModel, *flagNodes**flagGPUs))
	if err != nil {
		return result{}, nil, err
	}
	tokens, err := api.ParseTokens([]byte("users:\n  - {name: bench, token: " + benchToken + ", admin: true}\n"))
	if err != nil {
		return result{}, nil, err
	}
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, KubeImage: image, KubeHeartbeatPods: true, Logger: logger(),
		Cluster: &structs.ClusterConfig{
			Clusters: []structs.Cluster{{Name: "k8s", Backend: "kubernetes", Kubeconfig: c.CoordinatorKubeconfig, Namespace: namespace}},
			Quotas:   []structs.Quota{*quota},
		}}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}
	d, err := daemon.Start(cfg)
	if err != nil {
		return result{}, nil, err
	}
	defer d.Close()
	cl := client.New(d.URL, benchToken)
	if err := waitNodes(ctx, cl); err != nil {
		return result{}, nil, err
	}

	w, err := watchRunning(ctx, c.Admin, *flagTasks)
	if err != nil {
		return result{}, nil, err
	}
	defer w.close()
	before, err := apiWrites(ctx, c)
	if err != nil {
		return result{}, nil, err
	}
	cpuBefore := readCPU(c)
	start := time.Now()
	err = parallel(*flagTasks, func(i int) error {
		spec := fmt.Appendf(nil, "kind: command\nname: bench-%04d\ncommand: [sleep, infinity]\nresources: {accelerators: {type: %s, count: 1}}\n", i, gpuModel)
		_, err := cl.SubmitJob(ctx, spec, fmt.Sprintf("bench-%04d", i))
		return err
	})
	if err != nil {
		return result{}, nil, fmt.Errorf("submit: %w", err)
	}
	r := result{submitted: time.Since(start)}
	if err := w.wait(ctx); err != nil {
		return result{}, nil, err
	}
	r.running = w.at.Sub(start)
	r.cpuBy, r.cpu = readCPU(c).since(cpuBefore)
	r.created, r.bound = w.createdAt.Sub(start), w.boundAt.Sub(start)
	fmt.Fprintf(os.Stderr, "%s: %s\n", "atom", w.progress(start))
	if after, err := apiWrites(ctx, c); err == nil {
		r.writes, r.writesBy = after.since(before)
	}

	pods, err := c.Admin.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(pods.Items) == 0 {
		return result{}, nil, fmt.Errorf("read a task Pod's shape: %v", err)
	}
	return r, shapeOf(&pods.Items[0]), nil
}

// waitNodes waits until the coordinator has every node, ready.
func waitNodes(ctx context.Context, cl *client.Client) error {
	for {
		nodes, err := cl.Nodes(ctx)
		ready := 0
		if err == nil {
			for _, n := range nodes {
				if n.State == structs.NodeReady {
					ready++
				}
			}
			if ready == *flagNodes {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the coordinator has %d of %d nodes ready (%v): %w", ready, *flagNodes, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// podShape is what kube-scheduler's Pods copy from atom's: image,
// priority class and resources.
type podShape struct {
	image         string
	priorityClass string
	resources     corev1.ResourceRequirements
}

func shapeOf(p *corev1.Pod) *podShape {
	return &podShape{image: p.Spec.Containers[0].Image, priorityClass: p.Spec.PriorityClassName,
		resources: *p.Spec.Containers[0].Resources.DeepCopy()}
}
