package state

import (
	"fmt"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// ExecutorAdd records one Spark executor Pod of a spark job as a task the
// leader is about to bind to Node. The leader chose the
// node on a snapshot (sched.PlaceExecutor); apply checks again that the
// job runs its current attempt with Driver live, that it has fewer than
// its most executors live, and that the node still has room. The task is
// no replica: its Index is past the job's replicas, and its ID
// (job-INDEX-aATTEMPT) is made here from the job's executors so far, so
// every server makes the same. The job's charge already covers its most
// executors: quota does not change. It takes one of the rooms held for
// the job's minimum executors (sched.TakeHeld), and may not take others'.
type ExecutorAdd struct {
	Job    structs.JobID  `json:"job"`
	Driver structs.TaskID `json:"driver"`
	Pod    string         `json:"pod"` // the executor Pod's name
	Node   structs.NodeID `json:"node"`
	Pool   structs.PoolID `json:"pool"`
	// Requests is what the executor Pod asks for (cpu, memory, GPUs), at
	// most the job's executor; nil (commands before it was recorded):
	// the job's executor.
	Requests *structs.Resources `json:"requests,omitempty"`
	// Resources and Accels are what the task holds on Node: Requests, or
	// for GPU executors the CPU and memory bound to their GPUs.
	Resources structs.Resources `json:"resources"`
	Accels    structs.AccelMask `json:"accels,omitempty"`
	Token     string            `json:"token"` // the task's allocation token (made by the leader)
	Now       time.Time         `json:"now"`
}

func (*ExecutorAdd) Type() MsgType { return MsgExecutorAdd }

func (c *ExecutorAdd) apply(s *State) (any, error) {
	j := s.Jobs[c.Job]
	switch {
	case j == nil:
		return nil, fmt.Errorf("executor pod %s: job %s: %w", c.Pod, c.Job, ErrNotFound)
	case j.Spark == nil:
		return nil, invalidf("executor pod %s: job %s is of kind %s: only spark jobs have executors", c.Pod, c.Job, j.Kind)
	case j.State != structs.JobScheduled && j.State != structs.JobRunning:
		return nil, invalidf("executor pod %s: job %s is %s: only a started job gets executors", c.Pod, c.Job, j.State)
	case c.Pod == "" || c.Token == "":
		return nil, invalidf("executor of job %s: no pod name or token given", c.Job)
	}
	d := s.Tasks[c.Driver]
	if d == nil || d.Job != j.ID || d.Executor != "" || d.Attempt != j.Attempt ||
		(d.State != structs.TaskScheduled && d.State != structs.TaskRunning) {
		return nil, invalidf("executor pod %s: task %s is not the live driver of job %s's attempt %d", c.Pod, c.Driver, j.ID, structs.AttemptNumber(j.Attempt))
	}
	live, next := 0, j.Replicas
	for _, t := range s.TasksOf(j.ID) {
		if t.Executor == c.Pod && t.State.HoldsResources() {
			return nil, existsf("executor pod %s is task %s already", c.Pod, t.ID)
		}
		if t.Attempt != j.Attempt {
			continue
		}
		next = max(next, t.Index+1)
		if t.Executor != "" && t.State.HoldsResources() && t.State != structs.TaskStopping {
			live++
		}
	}
	if most := j.Spark.MaxExecutors(); live >= most {
		return nil, invalidf("executor pod %s: job %s already runs %d executors, its most (spark executor instances or dynamicAllocation.maxExecutors)", c.Pod, j.ID, live)
	}
	if err := c.checkResources(j); err != nil {
		return nil, err
	}
	// It takes one of the rooms held for the job's minimum executors (on
	// its node if it has one there); what others hold stays theirs.
	held := sched.TakeHeld(s.Reservations, j.ID, c.Node)
	if err := s.checkRoom(c.Node, s.Nodes[d.Node], c.Resources, c.Accels, held); err != nil {
		return nil, fmt.Errorf("executor pod %s: %w", c.Pod, err)
	}
	if c.Pool != d.Pool {
		return nil, invalidf("executor pod %s: pool %s is not its driver's (%s)", c.Pod, c.Pool, d.Pool)
	}
	id := structs.MakeTaskID(j.ID, next, j.Attempt)
	if s.Tasks[id] != nil {
		return nil, existsf("task %s already exists", id)
	}
	t := &structs.Task{
		ID: id, Job: j.ID, Index: next, Attempt: j.Attempt, Node: c.Node, Pool: c.Pool, Priority: j.Priority,
		State: structs.TaskScheduled, Resources: c.Resources, Accels: c.Accels, Executor: c.Pod, ScheduledAt: c.Now,
	}
	s.addTask(t)
	s.placedEvent(c.Now, t, "")
	s.Tokens[id] = c.Token
	s.Reservations = held
	s.dropExecutorReservation(j.ID, c.Pod) // the room preempted for it, if any
	return id, nil
}

// checkResources checks that the executor asks for at most job j's
// executor (which j's charge covers) and holds what it asks: its GPUs of
// the executor's type, and its CPU and memory (no more, unless bound to
// its GPUs).
func (c *ExecutorAdd) checkResources(j *structs.Job) error {
	want := j.Spark.ExecutorResources()
	ask := want
	if c.Requests != nil {
		ask = *c.Requests
	}
	r := c.Resources
	switch {
	case ask.MilliCPU < 0 || ask.Memory < 0 || ask.Accels < 0 ||
		ask.MilliCPU > want.MilliCPU || ask.Memory > want.Memory || ask.Accels > want.Accels:
		return invalidf("executor pod %s asks for %s: more than job %s's executor (%s), which its quota was charged for", c.Pod, ask, j.ID, want)
	case r.Accels != ask.Accels || int64(c.Accels.Count()) != ask.Accels || (ask.Accels > 0 && r.AccelType != want.AccelType) ||
		r.MilliCPU < ask.MilliCPU || r.Memory < ask.Memory || (ask.Accels == 0 && (r.MilliCPU != ask.MilliCPU || r.Memory != ask.Memory)):
		return invalidf("executor pod %s: resources %s (%d accelerators held) are not what it asks for (%s)", c.Pod, r, c.Accels.Count(), ask)
	}
	return nil
}

// ErrNoRoom: the node chosen for an executor has no room left (or is not
// ready); the leader may try again later.
var ErrNoRoom = fmt.Errorf("no room")

// checkRoom checks that node can take a task holding r and accels now,
// in the cluster of near (the driver's node), beside the room held
// there for spark executors by held (ReserveMinExecutors).
func (s *State) checkRoom(node structs.NodeID, near *structs.Node, r structs.Resources, accels structs.AccelMask, held []sched.Reservation) error {
	if err := s.checkNear(node, near); err != nil {
		return err
	}
	if n := s.Nodes[node]; n.Capacity.Accels < 64 && uint64(accels)>>uint(max(n.Capacity.Accels, 0)) != 0 {
		return invalidf("node %s has no accelerator %v", node, accels.Indices())
	}
	uses := s.nodeUse()
	uses.AddHeld(held)
	if err := sched.CheckNode(node, s.Nodes[node], uses[node], nil, r, accels, r.String()); err != nil {
		return fmt.Errorf("%w: %w", err, ErrNoRoom)
	}
	return nil
}
