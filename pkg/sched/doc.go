// Package sched decides which job runs where, now. It is pure: no I/O, no
// clock reads, no global state. Schedule takes an immutable Snapshot of the
// cluster and the pending jobs and returns a Plan (placements, preemptions,
// reservations, pending timeouts and why-pending reasons); the same input
// always gives the same plan. Admit decides at submit whether a job is
// accepted and what quota it charges. The rules are those of DESIGN §4 and
// are summarised in the README.
package sched
