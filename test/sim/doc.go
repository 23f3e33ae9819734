// Command sim replays the Alibaba GPU cluster trace (cluster-trace-gpu-v2023,
// Weng et al., USENIX ATC '23; copies in testdata/) through atom's scheduling
// core and three classic baselines, and compares their GPU allocation rates
// (DESIGN §9: atom must beat Best-Fit side by side in one run).
//
//	make sim                      # = go run ./test/sim: 3 traces × 4 policies × 10 seeds
//	go run ./test/sim -seeds 1 -trace gpuspec33 -policy atom,best-fit -why
//
// The experiment, per pod list (default, multigpu50, gpuspec33) and seed:
//
//   - The cluster is the 1,523 nodes of openb_node_list_all_node.csv: all
//     ready, in the public pool; GPU nodes carry their GPUs as accelerators of
//     their model and the tag model=<model>.
//   - Tasks are drawn uniformly with replacement from the pod list (math/rand/v2
//     PCG seeded with the seed) and submitted one after another, with no
//     departures, until the GPUs asked for reach 130% of the cluster's GPUs. A
//     fractional GPU request counts as one whole GPU. A task that does not fit
//     when it arrives fails and is not retried.
//   - GPU allocation rate = GPUs allocated at the end / GPUs in the cluster,
//     averaged over seeds 1..N. Every policy sees the same arrivals per seed.
//
// Policies:
//
//   - atom: each task becomes a one-replica, normal-priority command job
//     (gpu_spec becomes the selector "model in (...)", accelerator type any)
//     and is placed by sched.Schedule on a snapshot of the nodes and every
//     task placed so far. The core applies its own rules: a GPU replica gets
//     the CPU and memory bound to its GPUs and may not ask for more, and
//     CPU-only tasks stay on CPU nodes.
//   - first-fit, best-fit, random: raw requests (cpu_milli, memory, GPUs,
//     accepted models) against what each node has left; CPU-only tasks may
//     land on GPU nodes. best-fit leaves the fewest free GPUs (CPU-only tasks:
//     the least free CPU), ties by least free CPU, then file order.
//
// Output is key=value: one line per trace and policy starting with
// trace=, policy= and gpu_alloc_rate= (4 decimals), an atom_vs_best_fit
// ratio per trace, and the total runtime; stderr has failures by GPU count,
// free GPUs by model at the end, and the core's time per call. The command
// exits 1 if atom does not beat best-fit on a trace, 2 on errors.
package main
