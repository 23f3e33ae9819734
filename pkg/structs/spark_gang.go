package structs

// MinExecutors returns the executors a spark job's driver is placed with,
// as one gang: dynamicAllocation.minExecutors with dynamic
// allocation (0: the driver alone; executors up to initialExecutors
// beyond it are best-effort), else executor.instances, every executor
// the job runs (Spark asks for them all at once and the job is charged
// for them).
func (s *Spark) MinExecutors() int {
	if s == nil {
		return 0
	}
	if s.DynamicAllocation != nil {
		return s.DynamicAllocation.MinExecutors
	}
	return s.Executor.Instances
}
