// Command benchk8s compares atom with what a Kubernetes user would run
// instead, on the same kind of cluster: a real kube-apiserver
// with etcd and kwok (test/k8s/k8stest), 200 kwok GPU nodes of 8
// nvidia.com/gpu each, and 1,000 one-GPU tasks. Each side gets a fresh,
// identical cluster and is timed from its first submission until a watch
// has seen all 1,000 Pods Running:
//
//   - atom: a coordinator server (the kube backend, heartbeating for the
//     kwok Pods, where no atom runs) follows the cluster's Nodes; two users
//     with quota submit 500 one-GPU jobs each through its HTTP API;
//   - floor: the bench creates the 1,000 Pods itself, already bound
//     (nodeName), of atom's image, priority class and resources: no
//     scheduler at all, the least any scheduler can take here;
//     floor-atom-pods: the same with the atom side's own Pods;
//   - kube: kube-scheduler (the same k8s.io/kubernetes module, default
//     settings) places 1,000 such Pods; kube-tuned: the same with its
//     client's QPS and burst raised to atom's;
//   - kueue: Kueue v0.17.0 with kube-scheduler and kube-controller-manager's
//     Job controller (tuned like kube-tuned): two ClusterQueues in a
//     cohort, 500 one-GPU batch/v1 Jobs per team;
//   - gang-atom, gang-kube: 125 jobs of 8 one-GPU replicas placed all or
//     nothing, by atom and by kube-scheduler's gang scheduling (the
//     GenericWorkload feature gate: PodGroups of scheduling.k8s.io/v1beta1).
//
// Every side submits with -workers concurrent clients and shares kwok's
// latency from bound to Running. Output is key=value lines: each side's
// time, API writes, reads and watch requests and CPU by process, then
// the ratios and their targets. BENCHK8S_LOG=info shows the
// coordinator's log; -cpuprofile profiles this process (the coordinator,
// the clients and the watch) on the atom side, from its first submission
// until all its Pods ran.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/test/loadavg"
)

var (
	flagNodes      = flag.Int("nodes", 200, "kwok GPU nodes")
	flagGPUs       = flag.Int("gpus", 8, "nvidia.com/gpu per node")
	flagTasks      = flag.Int("tasks", 1000, "one-GPU tasks on each side (a multiple of -gang)")
	flagGang       = flag.Int("gang", 8, "replicas of each gang job on the gang sides")
	flagWorkers    = flag.Int("workers", 32, "concurrent clients submitting jobs or creating Pods")
	flagTimeout    = flag.Duration("timeout", 15*time.Minute, "give up after this long")
	flagSides      = flag.String("sides", strings.Join(allSides, ","), "the sides to run, in this order")
	flagKwok       = flag.Int("kwok-parallelism", 16, "Pods (and nodes) kwok plays the kubelet of at once, on every side")
	flagCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of the atom side to this file")
)

// allSides are the sides, in the order they run by default: the slow
// default kube-scheduler last.
var allSides = []string{"atom", "floor", "floor-atom-pods", "kube-tuned", "kueue", "gang-atom", "gang-kube", "kube"}

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
	sides := strings.Split(*flagSides, ",")
	for _, s := range sides {
		if !slices.Contains(allSides, s) {
			return fmt.Errorf("-sides: unknown side %q: use some of %s", s, strings.Join(allSides, ","))
		}
	}
	if *flagTasks > *flagNodes**flagGPUs {
		return fmt.Errorf("-tasks %d: the cluster has %d GPUs: use at most that many", *flagTasks, *flagNodes**flagGPUs)
	}
	if *flagGang < 1 || *flagTasks%*flagGang != 0 {
		return fmt.Errorf("-gang %d: -tasks (%d) must be a multiple of it", *flagGang, *flagTasks)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()
	fmt.Printf("nodes=%d gpus_per_node=%d tasks=%d gang=%d workers=%d\n", *flagNodes, *flagGPUs, *flagTasks, *flagGang, *flagWorkers)
	fmt.Printf("loadavg_before=%s\n", loadavg.String())
	if i := slices.Index(sides, "floor-atom-pods"); i >= 0 && !slices.Contains(sides[:i], "atom") {
		return fmt.Errorf("-sides: floor-atom-pods creates the atom side's Pods: run atom before it")
	}
	res := map[string]result{}
	shape, atom := defaultShape(), result{}
	for _, side := range sides {
		r, err := runSide(ctx, side, shape, atom.pods)
		if err != nil {
			return fmt.Errorf("%s side: %w", side, err)
		}
		if side == "atom" {
			shape, atom = shapeOf(&r.pods[0]), r
		}
		res[side] = r
		r.print(side)
	}
	fmt.Printf("loadavg_after=%s\n", loadavg.String())
	printRatios(res)
	return nil
}

// runSide runs one side on a fresh cluster.
func runSide(ctx context.Context, side string, shape *podShape, atomPods []corev1.Pod) (result, error) {
	switch side {
	case "atom":
		return runAtom(ctx, side, 1)
	case "gang-atom":
		return runAtom(ctx, side, *flagGang)
	case "floor":
		return runFloor(ctx, shape)
	case "floor-atom-pods":
		return runFloorAtomPods(ctx, atomPods)
	case "kube":
		return runKube(ctx, shape, nil)
	case "kube-tuned":
		return runKube(ctx, shape, tunedClient())
	case "gang-kube":
		return runGangKube(ctx, shape)
	case "kueue":
		return runKueue(ctx, shape)
	}
	return result{}, fmt.Errorf("unknown side %q", side)
}

// profile writes a CPU profile of side to -cpuprofile if it is the atom
// side.
func profile(side string) (stop func(), err error) {
	if *flagCPUProfile == "" || side != "atom" {
		return func() {}, nil
	}
	f, err := os.Create(*flagCPUProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
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
	// reads are its GET and LIST requests meanwhile, in all and by
	// resource.
	reads   int
	readsBy string
	// watches are its watch requests from its start until all were
	// Running (every program's, the retries after a watch ended among
	// them): in all, of Pods and of Nodes; and of those the ones still
	// open then.
	watches                         int
	podWatches, nodeWatches         int
	openPodWatches, openNodeWatches int
	// cpu is the CPU seconds the cluster's programs and this process
	// used until all were Running, in all and by process.
	cpu   float64
	cpuBy string
	// pods are the atom side's task Pods: the other sides copy their
	// shape, floor-atom-pods the Pods.
	pods []corev1.Pod
}

// timeKey is the name of each side's headline figure: the time from the
// first submission until every Pod ran.
var timeKey = map[string]string{
	"atom":            "atom_submit_to_running_s",
	"floor":           "floor_s",
	"floor-atom-pods": "floor_atom_pods_s",
	"kube":            "kube_scheduler_create_to_running_s",
	"kube-tuned":      "kube_tuned_s",
	"kueue":           "kueue_s",
	"gang-atom":       "gang_atom_s",
	"gang-kube":       "gang_kube_s",
}

func (r result) print(side string) {
	p := strings.ReplaceAll(side, "-", "_")
	fmt.Printf("%s_submitted_s=%.2f %s_pods_created_s=%.2f %s_pods_bound_s=%.2f\n", p, r.submitted.Seconds(), p, r.created.Seconds(), p, r.bound.Seconds())
	fmt.Printf("%s_api_writes=%d %s_api_writes_by_resource=%s\n", p, r.writes, p, r.writesBy)
	fmt.Printf("%s_api_reads=%d %s_api_reads_by_resource=%s\n", p, r.reads, p, r.readsBy)
	fmt.Printf("%s_api_watches=%d %s_api_watches_pods=%d %s_api_watches_nodes=%d %s_open_watches_pods=%d %s_open_watches_nodes=%d\n",
		p, r.watches, p, r.podWatches, p, r.nodeWatches, p, r.openPodWatches, p, r.openNodeWatches)
	fmt.Printf("%s_cpu_s=%.2f %s_cores=%.2f %s_cpu_s_by_process=%s\n", p, r.cpu, p, r.cpu/r.running.Seconds(), p, r.cpuBy)
	fmt.Printf("%s=%.2f\n", timeKey[side], r.running.Seconds())
}

// printRatios prints each ratio whose two sides ran, with its target.
func printRatios(res map[string]result) {
	ratio := func(key, num, den, target string, met func(float64) bool) {
		n, ok1 := res[num]
		d, ok2 := res[den]
		if !ok1 || !ok2 {
			return
		}
		v := n.running.Seconds() / d.running.Seconds()
		line := fmt.Sprintf("%s=%.2f", key, v)
		if target != "" {
			verdict := "met"
			if !met(v) {
				verdict = "NOT met"
			}
			line = fmt.Sprintf("%-34s # target %s: %s", line, target, verdict)
		}
		fmt.Println(line)
	}
	atMost := func(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }
	atLeast := func(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
	ratio("atom_vs_floor", "atom", "floor", "<= 1.3", atMost(1.3))
	ratio("atom_vs_floor_atom_pods", "atom", "floor-atom-pods", "", nil)
	ratio("speedup_vs_kube_tuned", "kube-tuned", "atom", ">= 1.5", atLeast(1.5))
	ratio("speedup_vs_kueue", "kueue", "atom", "> 1 (atom faster)", func(v float64) bool { return v > 1 })
	ratio("gang_speedup_vs_kube", "gang-kube", "gang-atom", "", nil)
	ratio("k8s_speedup_vs_kube_scheduler", "kube", "atom", "", nil)
}
