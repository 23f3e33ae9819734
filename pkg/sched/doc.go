// Package sched decides which job runs where, now. It is pure: no I/O, no
// clock reads, no global state. Schedule takes an immutable Snapshot of the
// cluster and the pending jobs and returns a Plan (placements, preemptions,
// reservations, pending timeouts and why-pending reasons); the same input
// always gives the same plan. Admit decides at submit whether a job is
// accepted and what quota it charges. README.md beside this file says
// where the rules are and how each question asked of nodes uses them.
//
// # Spark: the driver comes with its minimum executors
//
// A spark job's driver (its replica 0) never starts alone while its
// executors wait, so several Spark jobs cannot each hold a driver's room
// and starve each other's executors (the Spark Operator deadlock):
//
//   - The minimum is dynamicAllocation.minExecutors with dynamic
//     allocation (0: the driver goes alone; executors from there up to
//     initialExecutors, and on to maxExecutors, are best-effort: each
//     binds when its Pod finds room), else executor.instances, all of
//     them (Spark asks for them at once and the job is charged for them).
//   - The driver and its minimum executors are placed in one decision, in
//     one pool of one cluster, on nodes the executors may use (the job's
//     selector, tolerations and affinity, plus the executor's
//     nodeSelector and GPU type), or the driver stays Pending with a
//     reason in words: "driver + 2 executors need cpu=2 memory=4Gi + 2 ×
//     cpu=4 memory=9Gi at once, in one pool of one cluster: 1 executor
//     fits now, ...".
//   - The executors are no tasks yet (Spark asks for their Pods once the
//     driver runs): the room they took is held for the job
//     (ReserveMinExecutors, one reservation per executor, Placement.Held),
//     from the driver's placement until executor Pods bind into it.
//     PlaceExecutor tries that room first; TakeHeld drops one room per
//     executor bound (on its node, else the job's last). The room is
//     released too when the job ends, is preempted, cancelled or
//     restarted. Nobody else is placed in it, whatever their priority.
//   - The job's charge is unchanged: the driver and its most executors,
//     charged at submit. CheckInvariants counts held room as used (no
//     node over capacity) and allows it only for running spark jobs, at
//     most their minimum's worth.
//   - Preemption: a low spark job is a victim whole, its driver, its
//     executors and its held room together (a node where it holds only
//     room makes it a candidate too). A normal or high spark job preempts
//     low work for its driver and its minimum executors together, and the
//     freed room is reserved for all of them.
//   - On a cluster that runs no executors (Snapshot.NoExecutors: the
//     local backend, where Spark runs in local mode on the driver's
//     cores) the driver goes alone.
package sched
