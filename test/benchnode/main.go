// Command benchnode measures how fast a placed task starts on a real
// Kubernetes node, atom against kube-scheduler, in one run: a test control
// plane (test/k8s/k8stest) with one real node (kubelet, containerd, runc;
// -gpus fake GPUs, checked by atom in its simulated mode), the cpu image of
// images/ imported, and a one-server coordinator (kube backend) listening
// on the node's bridge, where atom in the task Pods reaches it.
//
//  1. atom: -services one-GPU services (one replica, `sleep infinity`),
//     submitted one after another, each once the one before it runs. Per
//     service: the leader's placement (the task's ScheduledAt: the
//     scheduling cycle whose plan placed it, committed through Raft in the
//     same cycle) to atom reporting the task Running (StartedAt, the
//     leader's clock when atom's Running heartbeat came: atom started as
//     the container's PID 1, exchanged its token, checked its GPU and
//     started the command), and the submission to Running.
//  2. kube-scheduler: once atom's Pods are gone and the coordinator is
//     stopped, kube-scheduler (default settings) places as many plain Pods
//     of the same image, resources and priority class, running `sleep
//     infinity` with no atom, one after another. Per Pod: its creation to a
//     watch seeing it Running (the kubelet's status through the API
//     server).
//
// Output is key=value lines; the last three are start_p50_s, start_p99_s
// and submit_to_running_p99_s (target: start_p99_s ≤ 2). Progress goes to
// stderr; BENCHNODE_LOG=debug shows the coordinator's log. The machine's
// real-node lock is taken first (one real node per machine): another
// program's node makes this one wait.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/test/k8s/k8stest"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

var (
	flagGPUs     = flag.Int("gpus", 24, "fake nvidia.com/gpu on the real node")
	flagServices = flag.Int("services", 20, "one-GPU services (and as many plain Pods for kube-scheduler)")
	flagTimeout  = flag.Duration("timeout", 20*time.Minute, "give up after this long (waiting for the machine's real node included)")
	flagEach     = flag.Duration("each", 2*time.Minute, "give up when one service or Pod has not run after this long")
)

const (
	gpuModel = "A100"
	// kubeNamespace holds kube-scheduler's Pods (nodetest.Namespace the
	// coordinator's).
	kubeNamespace = "bench-kube"
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchnode:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func run() (err error) {
	if *flagServices < 1 || *flagServices > *flagGPUs {
		return fmt.Errorf("-services %d: give 1 to -gpus (%d), one GPU each", *flagServices, *flagGPUs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()
	fmt.Printf("gpus=%d services=%d\n", *flagGPUs, *flagServices)

	// The control plane and the real node (once the machine's real-node
	// lock is free) with the cpu image and -gpus GPUs, checked by atom in
	// its simulated mode, and the coordinator. Its scheduling cycle and
	// heartbeat settings are the defaults; finished Pods go after a second.
	e, err := nodetest.New(ctx, nodetest.Options{
		Name: "benchnode", Node: k8stest.RealNodeOptions{GPUs: *flagGPUs, GPUModel: gpuModel}, Images: []string{"cpu"},
		Namespaces:   []string{kubeNamespace},
		Quota:        fmt.Sprintf("scope: user:dev\nlimits: {gpu/%s: %d, cpu: 64, memory: 256Gi}\n", gpuModel, *flagGPUs),
		HeartbeatTTL: server.DefaultHeartbeatTTL, Cycle: server.DefaultCycle, StopGrace: server.DefaultStopGrace,
		KeepFinished: time.Second, Logger: nodetest.StderrLogger("BENCHNODE_LOG"), Logf: logf,
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
		}
	}()
	img := e.Imported["cpu"]
	fmt.Printf("image_build_s=%.2f image_built=%t image_bytes=%d\n", img.Seconds, img.Built, img.Bytes)
	fmt.Printf("cluster_startup_s=%.2f node_startup_s=%.2f image_import_s=%.2f\n",
		e.Cluster.StartupTime.Seconds(), e.Node.StartupTime.Seconds(), img.Import.Seconds())

	atom, shape, err := runAtom(ctx, e)
	if err != nil {
		return fmt.Errorf("atom: %w", err)
	}
	fmt.Printf("atom_pod_cpu=%s atom_pod_memory=%s\n", shape.resources.Requests.Cpu(), shape.resources.Requests.Memory())
	fmt.Printf("atom_submit_to_scheduled_p50_s=%s atom_scheduled_to_pod_created_p50_s=%s atom_scheduled_to_pod_running_p50_s=%s\n",
		p(atom.submitToScheduled, 50), p(atom.scheduledToCreated, 50), p(atom.scheduledToPodRunning, 50))
	fmt.Printf("atom_start_s=%s\n", list(atom.start))

	kube, err := runKube(ctx, e, shape)
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	fmt.Printf("kube_scheduler_submit_to_bound_p50_s=%s kube_scheduler_submit_to_running_p50_s=%s\n",
		p(kube.submitToBound, 50), p(kube.submitToRunning, 50))
	fmt.Printf("kube_scheduler_submit_to_running_s=%s\n", list(kube.submitToRunning))
	fmt.Printf("kube_scheduler_submit_to_running_p99_s=%s\n", p(kube.submitToRunning, 99))

	fmt.Printf("start_p50_s=%s\n", p(atom.start, 50))
	fmt.Printf("start_p99_s=%s\n", p(atom.start, 99))
	fmt.Printf("submit_to_running_p99_s=%s\n", p(atom.submitToRunning, 99))
	return nil
}

// p is the nearest-rank percentile q of ds in seconds (of 20, p99 is the
// slowest).
func p(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "NaN"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return fmt.Sprintf("%.2f", s[max(0, min(i, len(s)-1))].Seconds())
}

// list is ds in seconds, in order, comma-separated.
func list(ds []time.Duration) string {
	out := ""
	for i, d := range ds {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("%.2f", d.Seconds())
	}
	return out
}
