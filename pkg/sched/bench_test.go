package sched_test

import (
	"testing"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
)

// BenchmarkSchedule runs one cycle over 10,000 nodes and 100,000 pending
// jobs (make bench-sched prints the same as key=value lines).
func BenchmarkSchedule(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := st.GenJobs(100000, 1, start)
	snap := st.GenSnapshot(st.GenCluster(10000, 1), jobs)
	b.ResetTimer()
	for b.Loop() {
		sched.Schedule(snap, sched.Input{Pending: jobs, Now: start.Add(time.Minute), Seed: 1})
	}
}
