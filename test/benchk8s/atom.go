package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// benchToken is the admin's (who waits for the nodes); teams are the
// users who submit, half the jobs each, each with a quota of half the
// cluster (as the kueue side's two ClusterQueues).
const benchToken = "benchk8s-admin-token-0123456789"

var teams = []string{"team-a", "team-b"}

func teamToken(team string) string { return "benchk8s-" + team + "-token-0123456789" }

// teamQuota is each team's share: half the cluster's GPUs, with the CPU
// and memory the nodes have per GPU.
func teamQuota() (gpus, cpus, memGi int) {
	g := *flagNodes * *flagGPUs / len(teams)
	return g, 12 * g, 128 * g
}

// runAtom is the atom side: a coordinator with the cluster as its
// kubernetes backend places -tasks one-GPU tasks, as jobs of gang replicas
// (gang 1: plain jobs). It returns the timing and atom's task Pods, whose
// shape the other sides copy.
func runAtom(ctx context.Context, side string, gang int) (result, error) {
	c, err := startCluster(ctx, side)
	if err != nil {
		return result{}, err
	}
	defer c.Close()

	dir, err := os.MkdirTemp("", "benchk8s-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	tokenFile := "users:\n  - {name: bench, token: " + benchToken + ", admin: true}\n"
	var quotas []structs.Quota
	gpus, cpus, mem := teamQuota()
	for _, t := range teams {
		tokenFile += fmt.Sprintf("  - {name: %s, token: %s}\n", t, teamToken(t))
		q, err := structs.ParseQuotaSpec(fmt.Appendf(nil, "scope: user:%s\nlimits: {gpu/%s: %d, cpu: %d, memory: %dGi}\n", t, gpuModel, gpus, cpus, mem))
		if err != nil {
			return result{}, err
		}
		quotas = append(quotas, *q)
	}
	tokens, err := api.ParseTokens([]byte(tokenFile))
	if err != nil {
		return result{}, err
	}
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, KubeImage: image, KubeHeartbeatPods: true, Logger: logger(),
		Cluster: &structs.ClusterConfig{
			Clusters: []structs.Cluster{{Name: "k8s", Backend: "kubernetes", Kubeconfig: c.CoordinatorKubeconfig, Namespace: namespace}},
			Quotas:   quotas,
		}}
	cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}
	d, err := daemon.Start(cfg)
	if err != nil {
		return result{}, err
	}
	defer d.Close()
	if err := waitNodes(ctx, client.New(d.URL, benchToken)); err != nil {
		return result{}, err
	}
	clients := map[string]*client.Client{}
	for _, t := range teams {
		clients[t] = client.New(d.URL, teamToken(t))
	}

	jobs := *flagTasks / gang
	r, err := measure(ctx, c, side, func() error {
		return parallel(jobs, func(i int) error {
			team := teams[i%len(teams)]
			name := fmt.Sprintf("%s-%04d", team, i)
			spec := fmt.Appendf(nil, "kind: command\nname: %s\nreplicas: %d\ncommand: [sleep, infinity]\nresources: {accelerators: {type: %s, count: 1}}\n",
				name, gang, gpuModel)
			_, err := clients[team].SubmitJob(ctx, spec, name)
			return err
		})
	})
	if err != nil {
		return result{}, err
	}
	pods, err := c.Admin.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		return result{}, fmt.Errorf("read the task Pods: %v", err)
	}
	r.pods = pods.Items
	return r, nil
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
