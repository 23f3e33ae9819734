package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// TakeExecutor lets the kubernetes backends bind Spark executor Pods
// (kube.Host): the leader places each on a snapshot (sched.PlaceExecutor:
// into the room held for the job's minimum executors first, which was
// taken with its driver) and commits it (state.ExecutorAdd), which checks
// the job's current attempt, its driver, its most executors and the
// node's room (others' held room included) again, and takes one held
// room. One of a normal or high job that fits nowhere preempts low jobs
// (sched.PreemptForExecutor, committed as state.ExecutorPreempt) and
// waits for the room held for it.
func (h kubeHost) TakeExecutor(ctx context.Context, req kube.ExecutorRequest) (structs.TaskID, structs.NodeID, error) {
	return takeExecutor(ctx, h.Server, req)
}

// ExecutorOf finds the executor task of job's Pod pod (kube.Host): the
// one holding resources, else any.
func (h kubeHost) ExecutorOf(job structs.JobID, pod string) (id structs.TaskID, node structs.NodeID, live bool) {
	h.Read(func(s *state.State) {
		for _, t := range s.TasksOf(job) {
			if t.Executor == pod && (id == "" || t.State.HoldsResources()) {
				id, node, live = t.ID, t.Node, t.State.HoldsResources()
			}
		}
	})
	return id, node, live
}

// ExecutorPod is executor task id's Pod name (kube.Host).
func (h kubeHost) ExecutorPod(id structs.TaskID) (pod string) {
	h.Read(func(s *state.State) {
		if t := s.Tasks[id]; t != nil {
			pod = t.Executor
		}
	})
	return pod
}

// takeExecutor records executor Pod req as a task of its job, held at
// what the Pod asks, on a node with room that the job and the Pod's own
// node selector, node affinity and tolerations allow. A refusal (the job
// ended or is not the driver's attempt, it runs its most executors, the
// Pod asks more than its executor) is returned as is; what may pass later
// (no such node, or none with room) wraps kube.ErrExecutorWait.
func takeExecutor(ctx context.Context, srv *server.Server, req kube.ExecutorRequest) (structs.TaskID, structs.NodeID, error) {
	var (
		j    *structs.Job
		d    *structs.Task
		snap *sched.Snapshot
	)
	srv.Read(func(s *state.State) {
		j, d = s.Jobs[req.Job], s.Tasks[req.Driver]
		if j != nil && d != nil {
			snap = s.Snapshot()
		}
	})
	switch {
	case j == nil:
		return "", "", fmt.Errorf("job %s does not exist", req.Job)
	case j.Spark == nil:
		return "", "", fmt.Errorf("job %s is of kind %s: only spark jobs have executors", j.ID, j.Kind)
	case d == nil || d.Job != j.ID:
		return "", "", fmt.Errorf("task %s is not job %s's driver", req.Driver, j.ID)
	}
	ask := req.Requests
	pod := sched.ExecutorPod{Name: req.Pod, Requests: ask,
		NodeSelector: req.NodeSelector, Affinity: req.Affinity, Tolerations: req.Tolerations}
	tp, err := sched.PlaceExecutor(snap, j, d, pod)
	if errors.Is(err, sched.ErrNoRoom) {
		return "", "", fmt.Errorf("%w: %w", kube.ErrExecutorWait, preemptForExecutor(ctx, srv, snap, j, d, pod, err))
	}
	if err != nil {
		return "", "", err
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		return "", "", fmt.Errorf("%w: make allocation token: %w", kube.ErrExecutorWait, err)
	}
	res, err := srv.Apply(ctx, &state.ExecutorAdd{Job: j.ID, Driver: d.ID, Pod: req.Pod, Node: tp.Node, Pool: tp.Pool,
		Requests: &ask, Resources: tp.Resources, Accels: tp.Accels, Token: hex.EncodeToString(buf), Now: time.Now()})
	switch {
	case err == nil:
		id, _ := res.(structs.TaskID)
		return id, tp.Node, nil
	case errors.Is(err, state.ErrInvalid) || errors.Is(err, state.ErrNotFound):
		return "", "", err
	}
	return "", "", fmt.Errorf("%w: %w", kube.ErrExecutorWait, err) // no room after all, no leader, outcome unknown
}

// preemptForExecutor has executor Pod pod of job j, which fits nowhere
// (noRoom says why), stop low jobs to make room for it, and returns why it
// waits: for them to stop, or as noRoom says when it preempts nothing.
func preemptForExecutor(ctx context.Context, srv *server.Server, snap *sched.Snapshot, j *structs.Job, d *structs.Task, pod sched.ExecutorPod, noRoom error) error {
	now := time.Now()
	pre, r, err := sched.PreemptForExecutor(snap, j, d, pod, now)
	if err != nil {
		if errors.Is(err, sched.ErrNoRoom) {
			return err
		}
		return noRoom
	}
	if _, err := srv.Apply(ctx, &state.ExecutorPreempt{Job: j.ID, Driver: d.ID, Pod: pod.Name, Preemptions: pre,
		Reservation: r, Now: now}); err != nil {
		return fmt.Errorf("%w (preempting for it failed: %w)", noRoom, err)
	}
	victims := make([]string, 0, len(pre))
	for _, p := range pre {
		victims = append(victims, string(p.Victim))
	}
	return fmt.Errorf("low-priority jobs %s on node %s are being stopped to make room for it: %w", strings.Join(victims, ", "), r.Node, sched.ErrNoRoom)
}
