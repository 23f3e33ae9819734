// Command sim replays the Alibaba GPU cluster trace (cluster-trace-gpu-v2023,
// Weng et al., USENIX ATC '23; copies in testdata/) through atom's scheduling
// core and classic baselines, side by side in one run: a packing
// replay per pod list, where atom must beat Best-Fit's GPU allocation rate,
// and a contended replay with departures, tenants and priorities, where
// atom must be the fairest without losing utilisation or more work to
// preemption.
//
//	make sim                      # = go run ./test/sim: all 4 traces × their policies × 10 seeds
//	go run ./test/sim -seeds 1 -trace gpuspec33 -policy atom,best-fit -why
//	go run ./test/sim -seeds 1 -trace contended -policy atom,first-fit
//
// # Packing replays
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
// free GPUs by model at the end, and the core's time per call.
//
// # Contended replay (trace=contended)
//
// Quota is oversubscribed, so who goes next decides who gets the cluster.
// Per seed (workload.go, contended.go):
//
//   - The cluster is one GPU node in 16 of the node list (in file order:
//     76 nodes, 414 GPUs, the list's mix of models), so that 10 seeds of
//     all four policies run in about a minute; the full list would need
//     about 16 times the jobs. No CPU-only node: every job asks for GPUs.
//   - Jobs are the GPU tasks of the default pod list that ran (6,203 with a
//     scheduled and a deletion time), drawn uniformly with replacement
//     (math/rand/v2 PCG seeded with the seed): cpu_milli, memory, GPUs
//     (fractional rounded up to one) and run time = deletion_time -
//     scheduled_time. qos BE is low priority, every other class (LS,
//     Burstable, Guaranteed) normal. Tasks atom could never place on the
//     sampled nodes (sched.Admit) are left out.
//   - Jobs arrive as a Poisson stream over 8 simulated hours, at the rate
//     that asks for 1.5 × the cluster's GPUs in GPU-seconds per second (run
//     times counted up to the 8 hours): about 5,300 jobs. Each is
//     submitted by one of 8 tenants (users t1..t8): t1 submits half of all
//     jobs, t2..t8 the other half in the ratio 7:6:5:4:3:2:1.
//   - Public-pool GPU quotas add up to twice the cluster's GPUs, in the
//     tenants' shares of jobs (t1: as many GPUs as the cluster). A normal
//     job holds its tenant's quota from submission to its end; a
//     submission over quota is refused, and its tenant submits it again at
//     every cycle, oldest first, until accepted (its later jobs wait
//     behind it). Low jobs use no quota.
//   - A scheduling cycle runs every 30 simulated seconds (the coordinator
//     runs one whenever something changed). A placed job runs at once for
//     its run time, then ends and frees its GPUs; a preempted job stops 30
//     seconds later (the coordinator's stop grace), loses its work and is
//     pending again, to run its whole run time from the start. Jobs never
//     time out pending and are never failed for being preempted too often,
//     so every policy keeps every job.
//   - Figures are over the measured window, hours 1..8 (the first hour
//     fills the empty cluster), averaged over seeds 1..N:
//     gpu_util: GPU-hours held by jobs / GPU-hours of the cluster;
//     jain: Jain's fairness index (Σx)²/(n·Σx²) over the tenants that
//     asked for GPUs in a one-hour window, of x = GPU-hours received / GPU-
//     hours asked for there (a job asks for its GPUs from its arrival until
//     it ends, and receives them while it holds them), averaged over the
//     windows; normal_wait_p50_s and normal_wait_p99_s: from a normal job's
//     arrival to its first placement, nearest rank, jobs arrived in the
//     window (one still waiting at the end counts what it has waited);
//     preempted_gpu_hours: the GPU-hours preempted attempts had held when
//     they stopped (work lost).
//
// Policies, all seeing the same arrivals per seed:
//
//   - atom, atom-fifo: the coordinator's replicated state (coordinator/state)
//     changed only by the commands its leader and agents send (JobSubmit,
//     PlanCommit, TaskUpdate, UsageAccrue every 30 s, JobsExpire; times
//     inside them), and sched.Schedule deciding each cycle on the state's
//     snapshot and pending jobs, as the leader's cycle does
//     (engine_atom.go). Quota, fair-share usage, order, placement,
//     preemption and requeueing are theirs; the replay adds no rule. atom
//     orders each priority by fair share (each tenant's weight set with
//     its quota, in proportion to it, -equal-weights for weight 1 each;
//     the default half-life and aging) and chooses victims losing the least
//     work; the public pool has no minimum runtime, as pools have unless
//     an admin sets one (-min-runtime sets it). atom-fifo is the order and
//     victim choice from before: the snapshot's fair-share positions are
//     dropped, so each priority goes oldest first; victim sets are ranked
//     by the accelerators they free before the work they lose
//     (sched.Input.ResourcesBeforeWork); a low service is a victim whole
//     (sched.Input.WholeServices; every job here has one replica, so this
//     changes nothing); no minimum runtime.
//   - A minimum runtime costs work here: jobs never checkpoint, so a
//     protected young job is exactly the one that loses least, and the
//     preemptor either takes an older victim or waits until a young one
//     has run the minimum and preempts it then. With -min-runtime 10m atom
//     loses about 1.8 times the GPU-hours it loses without, for 13% fewer
//     preemptions. What
//     the minimum buys, progress between preemptions for jobs that save a
//     checkpoint on their notice, is not in this replay.
//   - first-fit (what a default Kubernetes does), best-fit: kube-scheduler's
//     queue (priority, then oldest first) over raw requests, the first node
//     that fits or the one left with the fewest free GPUs; a job that does
//     not fit does not block those behind it; no preemption; quota as a
//     ResourceQuota on GPUs (engine_fifo.go).
//
// One line per policy: trace=contended policy=P gpu_util= jain=
// normal_wait_p50_s= normal_wait_p99_s= preempted_gpu_hours=; stderr has,
// per policy, jain_vs_fair_share (the same index of x = GPU-hours received
// / the tenant's weighted max-min fair share of all received in the
// window: what fair share aims at, where jain rewards getting in
// proportion to what was asked; the two agree when weights follow the
// quotas, which follow what tenants ask), each tenant's GPU-hours received / asked
// over the window, jobs, preemptions, cycles and the core's time. Targets: atom's jain at
// least 0.9 and above every other policy's; its gpu_util within 1 point
// (0.01) of the best policy's; its preempted_gpu_hours below atom-fifo's.
//
// The command exits 1 if a target of a replayed trace is missed (it says
// which on stderr), 2 on errors.
package main
