package sched_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRandomExecutors drives random CPU clusters where spark jobs of every
// priority ask for executors among low, normal and high jobs (seeded, the
// seed in the subtest name); their drivers come with their minimum
// executors (all of them, or a dynamic minimum of 0 to 2). On every step
// the invariants hold (the harness checks them: held room counts as
// used), Schedule is deterministic, no driver runs without its minimum
// executors bound or held, and whenever an executor preempts: it is of a
// normal or high job, every victim is a low job other than its own, the
// executor fits once the victims have gone, and while its room is held
// and no high job waits, it is placed there.
func TestRandomExecutors(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			randomExecutors(t, seed, 120)
		})
	}
}

func randomExecutors(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 25))
	var nodes []*structs.Node
	for i := range 3 + r.IntN(4) {
		n := st.CPUNode(fmt.Sprintf("n%d", i), []int64{8, 16, 32}[r.IntN(3)], 128)
		if i == 0 || r.IntN(4) == 0 {
			n.Pool = "vision"
		}
		nodes = append(nodes, n)
	}
	h := st.New(t, nodes...)
	h.Pool(&structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u0", "u1"}, LendIdle: true})
	for u := range 3 {
		h.Quota(structs.UserScope(structs.UserID(fmt.Sprintf("u%d", u))), structs.ResourceList{"cpu": 200000, "memory": 2000 * st.Gi})
	}
	h.Quota(structs.ProjectScope("vision"), structs.ResourceList{"cpu": 200000, "memory": 2000 * st.Gi})
	next, pods := 0, 0
	fresh := map[string]structs.JobID{} // executor Pods that preempted since the last Settle, and their jobs
	for range steps {
		switch op := r.IntN(12); {
		case op < 4: // submit
			next++
			b := st.NewJob(fmt.Sprintf("j%03d", next), fmt.Sprintf("u%d", r.IntN(3))).CPU(int64(1+r.IntN(12)), int64(1+r.IntN(16)))
			switch r.IntN(3) {
			case 0:
				b.Low()
			case 1:
				if r.IntN(3) == 0 {
					b.Project("vision").High()
				}
			}
			j := b.Obj()
			if r.IntN(2) == 0 {
				j.Kind, j.Resources = structs.KindSpark, structs.Resources{MilliCPU: 1000, Memory: st.Gi}
				j.Spark = &structs.Spark{MainApplicationFile: "local:///a.py", Executor: structs.SparkExecutor{
					Cores: 1 + r.IntN(6), Memory: int64(1+r.IntN(4)) * st.Gi, MemoryOverhead: st.Gi}}
				if r.IntN(2) == 0 {
					j.Spark.Executor.Instances = 1 + r.IntN(4) // all of them placed with the driver
				} else {
					lo := r.IntN(3)
					j.Spark.DynamicAllocation = &structs.SparkDynamicAllocation{MinExecutors: lo, InitialExecutors: lo, MaxExecutors: lo + 1 + r.IntN(3)}
				}
			}
			_ = h.Submit(j)
		case op < 8: // an executor Pod of a running spark job
			var spark []structs.JobID
			for id, j := range h.Snap.Jobs {
				// The state takes executors only of a live driver.
				if j.Spark != nil && j.State == structs.JobRunning && len(h.Tasks(string(id))) <= j.Spark.MaxExecutors() &&
					driverTask(h, id).State == structs.TaskRunning {
					spark = append(spark, id)
				}
			}
			if len(spark) == 0 {
				break
			}
			slices.Sort(spark)
			pods++
			pod, id := fmt.Sprintf("exec-%d", pods), spark[r.IntN(len(spark))]
			if randomExecutor(h, id, pod) {
				fresh[pod] = id
			}
		case op < 9:
			var running []string // not being stopped: victims stop at Settle
			for id, j := range h.Snap.Jobs {
				if j.State == structs.JobRunning && !slices.ContainsFunc(h.Tasks(string(id)), func(x *structs.Task) bool { return x.State == structs.TaskStopping }) {
					running = append(running, string(id))
				}
			}
			if len(running) > 0 {
				slices.Sort(running)
				h.Finish(running[r.IntN(len(running))], structs.JobSucceeded)
			}
		case op < 10:
			h.Settle()
			h.Cycle() // the requeued victims try first
			retryHeld(h, fresh)
			clear(fresh)
		default:
			h.Advance(time.Duration(r.IntN(40)) * time.Second)
		}
		checkDeterministic(t, h, r)
		h.Cycle()
		checkMinExecutors(h)
	}
}

// checkMinExecutors: no spark driver runs without its minimum executors
// bound or their room held (executors here end only with their job).
func checkMinExecutors(h *st.Harness) {
	for _, id := range slices.Sorted(maps.Keys(h.Snap.Jobs)) {
		j := h.Snap.Jobs[id]
		if j.Spark == nil || j.State != structs.JobRunning || slices.ContainsFunc(h.Tasks(string(id)), func(x *structs.Task) bool { return x.State == structs.TaskStopping }) {
			continue
		}
		got := len(h.Held(string(id))) + len(h.Executors(string(id)))
		require.GreaterOrEqual(h.T, got, j.Spark.MinExecutors(), "spark job %s runs its driver with %d executors bound or held, below its minimum", id, got)
	}
}

// driverTask is spark job id's driver.
func driverTask(h *st.Harness, id structs.JobID) *structs.Task {
	for _, x := range h.Tasks(string(id)) {
		if x.Executor == "" {
			return x
		}
	}
	h.T.Fatalf("job %s has no driver", id)
	return nil
}

// randomExecutor places executor Pod pod of job id, or has it preempt
// (then true).
func randomExecutor(h *st.Harness, id structs.JobID, pod string) bool {
	t := h.T
	j := h.Job(string(id))
	d := driverTask(h, id)
	ep := sched.ExecutorPod{Name: pod, Requests: j.Spark.ExecutorResources()}
	held := h.Held(string(id))
	tp, err := sched.PlaceExecutor(h.Snap, j, d, ep)
	if len(held) > 0 {
		// Its room is held, and nobody took it: it goes there.
		require.NoError(t, err, "executor %s of job %s with room held on %s", pod, id, held[0].Node)
		require.Equal(t, held[0].Node, tp.Node, "executor %s of job %s binds into its held room", pod, id)
	}
	if err == nil {
		placeExecutor(h, j, pod, tp)
		return false
	}
	require.ErrorIs(t, err, sched.ErrNoRoom)
	pre, res, err := sched.PreemptForExecutor(h.Snap, j, d, ep, h.Now)
	if err != nil {
		require.ErrorIs(t, err, sched.ErrNoRoom)
		return false
	}
	require.NotEqual(t, structs.PriorityLow, j.Priority, "a low job's executor preempted")
	require.NotEmpty(t, pre)
	gone := map[structs.TaskID]bool{}
	for _, p := range pre {
		v := h.Job(string(p.Victim))
		require.Equal(t, structs.PriorityLow, v.Priority, "victim %s", v.ID)
		require.NotEqual(t, j.ID, v.ID)
		for _, x := range p.Tasks {
			gone[x] = true
		}
	}
	// Nothing goes unless the executor then fits.
	after := *h.Snap
	after.Tasks = slices.DeleteFunc(slices.Clone(h.Snap.Tasks), func(x *structs.Task) bool { return gone[x.ID] })
	after.Reservations = slices.DeleteFunc(slices.Clone(h.Snap.Reservations), func(r sched.Reservation) bool {
		return slices.ContainsFunc(pre, func(p sched.Preemption) bool { return p.Victim == r.Job }) // their held room too
	})
	_, err = sched.PlaceExecutor(&after, j, d, ep)
	require.NoError(t, err, "the executor does not fit once its victims have gone")
	preemptFor(h, pre, res)
	return true
}

// placeExecutor records executor pod of j at tp and drops its room.
func placeExecutor(h *st.Harness, j *structs.Job, pod string, tp sched.TaskPlacement) {
	idx := j.Replicas
	for _, x := range h.Snap.Tasks {
		if x.Job == j.ID {
			idx = max(idx, x.Index+1)
		}
	}
	h.Snap.Tasks = append(h.Snap.Tasks, &structs.Task{ID: structs.MakeTaskID(j.ID, idx, j.Attempt), Job: j.ID, Index: idx,
		Attempt: j.Attempt, Node: tp.Node, Pool: tp.Pool, Priority: j.Priority, State: structs.TaskRunning,
		Resources: tp.Resources, Accels: tp.Accels, Executor: pod, ScheduledAt: h.Now, StartedAt: h.Now})
	h.Snap.Reservations = slices.DeleteFunc(slices.Clone(h.Snap.Reservations), func(r sched.Reservation) bool {
		return r.Kind == sched.ReserveExecutor && r.Job == j.ID && r.Executor == pod
	})
	h.Snap.Reservations = sched.TakeHeld(h.Snap.Reservations, j.ID, tp.Node)
	require.NoError(h.T, sched.CheckInvariants(h.Snap))
}

// retryHeld tries every executor whose room is held, once its victims
// have stopped: while no high job waits (a high job may take a normal
// one's room), it must be placed there. Those of fresh (their victims
// stopped just now) must still have their room.
func retryHeld(h *st.Harness, fresh map[string]structs.JobID) {
	highWaits := slices.ContainsFunc(h.Pending(), func(j *structs.Job) bool { return j.Priority == structs.PriorityHigh })
	held := map[string]bool{}
	for _, r := range h.Snap.Reservations {
		if r.Kind == sched.ReserveExecutor {
			held[r.Executor] = true
		}
	}
	for _, r := range slices.Clone(h.Snap.Reservations) {
		if r.Kind != sched.ReserveExecutor {
			continue
		}
		j := h.Job(string(r.Job))
		if j.State != structs.JobRunning || driverTask(h, j.ID).State != structs.TaskRunning {
			continue
		}
		pod := sched.ExecutorPod{Name: r.Executor, Requests: j.Spark.ExecutorResources()}
		tp, err := sched.PlaceExecutor(h.Snap, j, driverTask(h, j.ID), pod)
		if errors.Is(err, sched.ErrNoRoom) && highWaits {
			continue
		}
		if errors.Is(err, sched.ErrNoRoom) {
			// Other preemptors' rooms count against what is free now,
			// though their victims still hold them: once every Stopping
			// task has gone, it fits.
			after := *h.Snap
			after.Tasks = slices.DeleteFunc(slices.Clone(h.Snap.Tasks), func(x *structs.Task) bool { return x.State == structs.TaskStopping })
			_, err = sched.PlaceExecutor(&after, j, driverTask(h, j.ID), pod)
			require.NoError(h.T, err, "executor %s of job %s has room held on node %s, taken", r.Executor, r.Job, r.Node)
			continue
		}
		require.NoError(h.T, err, "executor %s of job %s has room held on node %s", r.Executor, r.Job, r.Node)
		placeExecutor(h, j, r.Executor, tp)
	}
	for _, pod := range slices.Sorted(maps.Keys(fresh)) {
		j := h.Job(string(fresh[pod]))
		if !held[pod] && j.State == structs.JobRunning && driverTask(h, j.ID).State == structs.TaskRunning {
			h.T.Fatalf("job %s runs, yet the room preempted for its executor %s is gone", j.ID, pod)
		}
	}
}
