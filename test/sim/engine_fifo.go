package main

import (
	"errors"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// fifoEngine is what a default Kubernetes scheduler does with the
// contended replay's raw requests (first-fit) and its best-fit variant:
// pending jobs in priority order, oldest first within a priority
// (kube-scheduler's PrioritySort queue), each put on the node its policy
// picks if one fits; a job that does not fit does not stop those behind
// it; nothing is preempted. Quota works as a ResourceQuota on GPUs: a
// tenant's normal jobs hold its quota from submission to their end, and
// a submission over it is refused.
type fifoEngine struct {
	b       *baseline
	jobs    []*simJob
	quota   [tenants]int64
	used    [tenants]int64
	pending []int // accepted, not placed, in submission order
	node    []int // per job, the node it holds; -1 when none
}

func newFIFOEngine(policy string, nodes []node, jobs []*simJob, quota [tenants]int64) (*fifoEngine, error) {
	b, err := newBaseline(policy, nodes, 0)
	if err != nil {
		return nil, err
	}
	e := &fifoEngine{b: b, jobs: jobs, quota: quota, node: make([]int, len(jobs))}
	for k := range e.node {
		e.node[k] = -1
	}
	return e, nil
}

func (e *fifoEngine) submit(k int, _ time.Duration) (bool, error) {
	j := e.jobs[k]
	if j.Priority == structs.PriorityNormal {
		if e.used[j.Tenant]+j.GPUs > e.quota[j.Tenant] {
			return false, nil
		}
		e.used[j.Tenant] += j.GPUs
	}
	e.pending = append(e.pending, k)
	return true, nil
}

func (e *fifoEngine) cycle(time.Duration) (placed, _ []int, _ error) {
	order := slices.Clone(e.pending)
	slices.SortStableFunc(order, func(a, b int) int {
		return int(e.jobs[b].Priority) - int(e.jobs[a].Priority)
	})
	// A request that did not fit still does not after later placements
	// in the same cycle: ask each distinct request once.
	failed := map[*template]bool{}
	for _, k := range order {
		t := e.jobs[k].template
		if failed[t] {
			continue
		}
		if i := e.b.take(&t.request); i >= 0 {
			e.node[k] = i
			placed = append(placed, k)
		} else {
			failed[t] = true
		}
	}
	if len(placed) > 0 {
		e.pending = slices.DeleteFunc(e.pending, func(k int) bool { return e.node[k] >= 0 })
	}
	return placed, nil, nil
}

func (e *fifoEngine) finish(k int, _ time.Duration) error {
	j := e.jobs[k]
	if e.node[k] < 0 {
		return errors.New("finished without a node")
	}
	e.b.release(&j.request, e.node[k])
	e.node[k] = -1
	if j.Priority == structs.PriorityNormal {
		e.used[j.Tenant] -= j.GPUs
	}
	return nil
}

func (e *fifoEngine) stopped(int, time.Duration) error {
	return errors.New("stopped, but this policy preempts nothing")
}
