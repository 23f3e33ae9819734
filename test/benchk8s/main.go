// Command benchk8s compares atom with kube-scheduler on the same kind of
// Kubernetes cluster (DESIGN §9, issue 5): a real kube-apiserver with
// etcd and kwok (test/k8s/k8stest), 200 kwok GPU nodes of 8 nvidia.com/gpu
// each, and 1,000 one-GPU tasks.
//
//  1. atom: a coordinator server (the kube backend, heartbeating for the
//     kwok Pods, where no atom runs) follows the cluster's Nodes; 1,000
//     one-GPU jobs are submitted through its HTTP API, and the time from
//     the first submission until a watch has seen all 1,000 task Pods
//     Running is measured;
//  2. kube-scheduler: on a fresh, identical cluster, kube-scheduler (built
//     from the same k8s.io/kubernetes module, default settings) runs, and
//     1,000 Pods with the same image, priority class and resources as
//     atom's are created; the time from the first creation until all are
//     Running is measured.
//
// Both sides submit with -workers concurrent clients, and both share
// kwok's latency from bound to Running. Output is key=value lines; the last
// is k8s_speedup_vs_kube_scheduler (target ≥ 5). BENCHK8S_LOG=info shows
// the coordinator's log; -cpuprofile profiles the atom run (this process:
// the coordinator).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"
)

var (
	flagNodes      = flag.Int("nodes", 200, "kwok GPU nodes")
	flagGPUs       = flag.Int("gpus", 8, "nvidia.com/gpu per node")
	flagTasks      = flag.Int("tasks", 1000, "one-GPU tasks (atom jobs, or Pods for kube-scheduler)")
	flagWorkers    = flag.Int("workers", 32, "concurrent clients submitting jobs or creating Pods")
	flagTimeout    = flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flagSkip       = flag.String("skip", "", "a run to skip: atom or kube")
	flagKwok       = flag.Int("kwok-parallelism", 16, "Pods (and nodes) kwok plays the kubelet of at once, in both runs")
	flagCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of the atom run to this file")
)

const (
	namespace = "bench"
	gpuModel  = "A100"
	image     = "atom/cpu:bench"
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchk8s:", err)
		os.Exit(1)
	}
}

func logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(os.Getenv("BENCHK8S_LOG"))); err != nil {
		lvl = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()
	fmt.Printf("nodes=%d gpus_per_node=%d tasks=%d workers=%d\n", *flagNodes, *flagGPUs, *flagTasks, *flagWorkers)
	if *flagTasks > *flagNodes**flagGPUs {
		return fmt.Errorf("-tasks %d: the cluster has %d GPUs: use at most that many", *flagTasks, *flagNodes**flagGPUs)
	}

	var atom, kube result
	var podTemplate *podShape
	if *flagSkip != "atom" {
		if *flagCPUProfile != "" {
			f, err := os.Create(*flagCPUProfile)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
		}
		r, shape, err := runAtom(ctx)
		if *flagCPUProfile != "" {
			pprof.StopCPUProfile()
		}
		if err != nil {
			return fmt.Errorf("atom run: %w", err)
		}
		atom, podTemplate = r, shape
		fmt.Printf("atom_submitted_s=%.2f atom_pods_created_s=%.2f atom_pods_bound_s=%.2f\n", atom.submitted.Seconds(), atom.created.Seconds(), atom.bound.Seconds())
		fmt.Printf("atom_api_writes=%d atom_api_writes_by_resource=%s\n", atom.writes, atom.writesBy)
		fmt.Printf("atom_cpu_s=%.2f atom_cpu_s_by_process=%s\n", atom.cpu, atom.cpuBy)
		fmt.Printf("atom_submit_to_running_s=%.2f\n", atom.running.Seconds())
	}
	if *flagSkip != "kube" {
		if podTemplate == nil {
			podTemplate = defaultShape()
		}
		r, err := runKube(ctx, podTemplate)
		if err != nil {
			return fmt.Errorf("kube-scheduler run: %w", err)
		}
		kube = r
		fmt.Printf("kube_created_s=%.2f kube_pods_bound_s=%.2f\n", kube.submitted.Seconds(), kube.bound.Seconds())
		fmt.Printf("kube_api_writes=%d kube_api_writes_by_resource=%s\n", kube.writes, kube.writesBy)
		fmt.Printf("kube_cpu_s=%.2f kube_cpu_s_by_process=%s\n", kube.cpu, kube.cpuBy)
		fmt.Printf("kube_scheduler_create_to_running_s=%.2f\n", kube.running.Seconds())
	}
	if atom.running > 0 && kube.running > 0 {
		fmt.Printf("k8s_speedup_vs_kube_scheduler=%.2f\n", kube.running.Seconds()/atom.running.Seconds())
	}
	return nil
}

// result is one side's timing from its first submission: until the last
// was accepted, until all Pods existed, were bound to nodes, and were
// Running.
type result struct {
	submitted, created, bound, running time.Duration
	// writes are the API server's write requests until all were Running,
	// in all and by resource.
	writes   int
	writesBy string
	// cpu is the CPU seconds the cluster's programs and this process
	// used until all were Running, in all and by process.
	cpu   float64
	cpuBy string
}
