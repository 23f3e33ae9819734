package state

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// MsgExecutorPreempt is ExecutorPreempt's type in the Raft log.
const MsgExecutorPreempt MsgType = 17

func init() { register(MsgExecutorPreempt, func() Command { return &ExecutorPreempt{} }) }

// ExecutorPreempt stops low jobs to make room for one executor Pod of a
// running normal or high spark job that fits nowhere: the
// leader chose the victims and the node on a snapshot
// (sched.PreemptForExecutor). Apply checks that the job still runs its
// current attempt with Driver live, below its most executors, that the
// Pod is no executor yet and holds no room already, and that every victim
// is a low job with live tasks; then the victims' tasks stop (they are
// requeued as any preempted job) and Reservation holds the room for the
// Pod (its Made set to this entry's index) until the executor takes it,
// or the scheduler lets it lapse (sched.ExecutorHold). All or nothing.
type ExecutorPreempt struct {
	Job         structs.JobID      `json:"job"`
	Driver      structs.TaskID     `json:"driver"`
	Pod         string             `json:"pod"`
	Preemptions []sched.Preemption `json:"preemptions"`
	Reservation sched.Reservation  `json:"reservation"`
	Now         time.Time          `json:"now"`
}

func (*ExecutorPreempt) Type() MsgType { return MsgExecutorPreempt }

func (c *ExecutorPreempt) apply(s *State) (any, error) {
	j := s.Jobs[c.Job]
	r := c.Reservation
	switch {
	case j == nil:
		return nil, fmt.Errorf("executor pod %s: job %s: %w", c.Pod, c.Job, ErrNotFound)
	case j.Spark == nil || j.Priority == structs.PriorityLow:
		return nil, invalidf("executor pod %s: job %s is a %s %s job: only executors of normal and high spark jobs preempt", c.Pod, j.ID, j.Priority, j.Kind)
	case j.State != structs.JobScheduled && j.State != structs.JobRunning:
		return nil, invalidf("executor pod %s: job %s is %s: only a started job's executors preempt", c.Pod, j.ID, j.State)
	case c.Pod == "" || len(c.Preemptions) == 0:
		return nil, invalidf("executor preemption for job %s: a pod name and at least one preemption are needed", j.ID)
	case r.Kind != sched.ReserveExecutor || r.Job != j.ID || r.Executor != c.Pod:
		return nil, invalidf("executor pod %s: the reservation must be of kind %s for job %s and pod %s", c.Pod, sched.ReserveExecutor, j.ID, c.Pod)
	}
	d := s.Tasks[c.Driver]
	if d == nil || d.Job != j.ID || d.Executor != "" || d.Attempt != j.Attempt ||
		(d.State != structs.TaskScheduled && d.State != structs.TaskRunning) {
		return nil, invalidf("executor pod %s: task %s is not the live driver of job %s's attempt %d", c.Pod, c.Driver, j.ID, structs.AttemptNumber(j.Attempt))
	}
	live := 0
	for _, t := range s.TasksOf(j.ID) {
		if t.Executor == c.Pod && t.State.HoldsResources() {
			return nil, existsf("executor pod %s is task %s already", c.Pod, t.ID)
		}
		if t.Attempt == j.Attempt && t.Executor != "" && t.State.HoldsResources() && t.State != structs.TaskStopping {
			live++
		}
	}
	if live >= j.Spark.MaxExecutors() {
		return nil, invalidf("executor pod %s: job %s already runs %d executors, its most", c.Pod, j.ID, live)
	}
	for _, o := range s.Reservations {
		if o.Kind == sched.ReserveExecutor && o.Job == j.ID && o.Executor == c.Pod {
			return nil, existsf("executor pod %s: room is held for it on node %s already", c.Pod, o.Node)
		}
	}
	ask := j.Spark.ExecutorResources()
	if r.Resources.Accels != 0 && r.Resources.Accels > ask.Accels || r.Resources.Accels == 0 && (r.Resources.MilliCPU > ask.MilliCPU || r.Resources.Memory > ask.Memory) ||
		r.Resources.MilliCPU < 0 || r.Resources.Memory < 0 || r.Resources.Accels < 0 {
		return nil, invalidf("executor pod %s: reservation %s is more than job %s's executor (%s)", c.Pod, r.Resources, j.ID, ask)
	}
	if err := s.checkNear(r.Node, s.Nodes[d.Node]); err != nil {
		return nil, fmt.Errorf("executor pod %s: %w", c.Pod, err)
	}
	seen := map[structs.JobID]bool{}
	for _, p := range c.Preemptions {
		v := s.Jobs[p.Victim]
		switch {
		case p.Preemptor != j.ID || seen[p.Victim]:
			return nil, invalidf("executor pod %s: preemption of %s names preemptor %s (want %s, each victim once)", c.Pod, p.Victim, p.Preemptor, j.ID)
		case v == nil || v.State.Ended() || v.Priority != structs.PriorityLow:
			return nil, invalidf("executor pod %s: job %s is no running low-priority job: only those are preempted", c.Pod, p.Victim)
		case !s.liveTasks(v.ID):
			return nil, fmt.Errorf("executor pod %s: job %s holds nothing to free any more: %w", c.Pod, p.Victim, ErrNoRoom)
		}
		seen[p.Victim] = true
	}
	for _, p := range c.Preemptions {
		s.stopVictim(p, c.Now)
	}
	r.Made, r.Freed = s.Index, time.Time{}
	s.Reservations = append(slices.Clone(s.Reservations), r)
	return nil, nil
}

// liveTasks reports whether job id has tasks Scheduled or Running.
func (s *State) liveTasks(id structs.JobID) bool {
	for _, t := range s.TasksOf(id) {
		if t.State == structs.TaskScheduled || t.State == structs.TaskRunning {
			return true
		}
	}
	return false
}

// stopVictim stops every live task of low job p.Victim for p.Preemptor
// (the attempt is stopped whole: it is requeued once they have stopped),
// or with p.Replicas only the replicas p.Tasks names (a service, which
// runs on with the others and places them again once stopped),
// recording it on both jobs. With nothing of it live any more, it does
// nothing.
func (s *State) stopVictim(p sched.Preemption, now time.Time) {
	v := s.Jobs[p.Victim]
	if v == nil || v.State.Ended() || v.Priority != structs.PriorityLow {
		return
	}
	only := map[structs.TaskID]bool{}
	if p.Replicas {
		for _, id := range p.Tasks {
			only[id] = true
		}
	}
	var nodes []string
	var replicas []int
	var lost int64
	var freed structs.Resources
	var notice time.Duration
	for _, t := range s.TasksOf(p.Victim) {
		if (t.State == structs.TaskScheduled || t.State == structs.TaskRunning) && (!p.Replicas || only[t.ID]) {
			until := s.noticeUntil(v, t, now)
			s.putTask(t.ID, func(t *structs.Task) {
				t.State, t.StopReason, t.NoticeUntil = structs.TaskStopping, structs.StopPreempted, until
			})
			lost += gpuSeconds(t, now)
			notice = max(notice, until.Sub(now))
			freed = addResources(freed, t.Resources)
			replicas = append(replicas, t.Index)
			if !slices.Contains(nodes, string(t.Node)) {
				nodes = append(nodes, string(t.Node))
			}
		}
	}
	if len(replicas) == 0 {
		// Stopped or gone since the plan's snapshot (restarting after a
		// failure, requeued, ...): that stop stands, this one frees
		// nothing and is not recorded.
		return
	}
	what := "its tasks"
	if p.Replicas {
		slices.Sort(replicas)
		what = "replicas " + joinInts(replicas)
		if len(replicas) == 1 {
			what = "replica " + joinInts(replicas)
		}
		s.putJob(p.Victim, func(j *structs.Job) {
			j.Reason = fmt.Sprintf("%s preempted by %s; placed again once stopped, where there is room", what, p.Preemptor)
		})
	} else {
		s.dropHeld(p.Victim) // a spark job's executors' room goes with it
		s.putJob(p.Victim, func(j *structs.Job) {
			j.Reason = "preempted by " + string(p.Preemptor)
			if j.AttemptStop == "" {
				j.AttemptStop = structs.StopPreempted // requeued once they have stopped (afterStop)
			}
		})
	}
	on := ""
	if len(nodes) > 0 {
		on = " on " + strings.Join(nodes, ", ")
	}
	work := ""
	if lost > 0 {
		work = fmt.Sprintf(", %d GPU-seconds of its work lost unless it checkpointed", lost)
	}
	after := ""
	if notice > 0 {
		after = fmt.Sprintf(" after a %s notice", notice)
	}
	msg := fmt.Sprintf("preempted by %s: stopping %s%s%s, freeing %s%s", p.Preemptor, what, on, after, freed, work)
	s.record(structs.Event{Time: now, Job: p.Victim, Type: structs.EventPreempted, Related: p.Preemptor, GPUSeconds: lost, Freed: &freed, Message: msg})
	if s.Jobs[p.Preemptor] != nil {
		of := "low-priority job " + string(p.Victim)
		if p.Replicas {
			of = fmt.Sprintf("%s of low-priority service %s", what, p.Victim)
		}
		s.record(structs.Event{Time: now, Job: p.Preemptor, Type: structs.EventPreempting, Related: p.Victim, GPUSeconds: lost, Freed: &freed,
			Message: fmt.Sprintf("preempting %s%s to make room: freeing %s%s", of, on, freed, work)})
	}
}

// joinInts is "1, 2, 3".
func joinInts(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ", ")
}

// checkNear checks that node is ready and in the cluster of near.
func (s *State) checkNear(node structs.NodeID, near *structs.Node) error {
	n := s.Nodes[node]
	switch {
	case n == nil || (n.State != structs.NodeReady && n.State != ""):
		return fmt.Errorf("node %s is gone or not ready: %w", node, ErrNoRoom)
	case near != nil && n.Cluster != near.Cluster:
		return invalidf("node %s is in cluster %s, not its driver's (%s)", node, n.Cluster, near.Cluster)
	}
	return nil
}

// keepReservations is the reservations after plan p: those p keeps of
// jobs still pending; an executor's, or room held for a spark job's
// minimum executors, only while its job runs, and only if it still
// exists (taken or dropped since p's snapshot, it stays gone); and those
// made after p's snapshot, which p did not see.
func (s *State) keepReservations(p *sched.Plan) []sched.Reservation {
	old := s.Reservations
	var out []sched.Reservation
	taken := make([]bool, len(old)) // held room matched once each
	for _, r := range p.Reservations {
		j := s.Jobs[r.Job]
		if j == nil || s.Nodes[r.Node] == nil {
			continue
		}
		running := j.State == structs.JobScheduled || j.State == structs.JobRunning
		switch r.Kind {
		case sched.ReserveExecutor:
			if running && slices.ContainsFunc(old, func(o sched.Reservation) bool {
				return o.Kind == sched.ReserveExecutor && o.Job == r.Job && o.Executor == r.Executor && o.Made == r.Made
			}) {
				out = append(out, r)
			}
		case sched.ReserveMinExecutors:
			// Kept as it is while it still exists: not taken by an
			// executor or dropped since p's snapshot.
			i := -1
			for k, o := range old {
				if !taken[k] && o.Kind == sched.ReserveMinExecutors && o.Job == r.Job && o.Node == r.Node && o.Made == r.Made {
					i = k
					break
				}
			}
			if running && i >= 0 {
				taken[i] = true
				out = append(out, old[i])
			}
		default:
			if j.State == structs.JobPending {
				out = append(out, r)
			}
		}
	}
	for _, o := range old {
		if (o.Kind == sched.ReserveExecutor || o.Kind == sched.ReserveMinExecutors) && o.Made > p.Index {
			out = append(out, o) // made after p's snapshot (this very commit's too)
		}
	}
	return out
}

// dropExecutorReservation drops the room held for executor Pod pod of job
// id (it took its place).
func (s *State) dropExecutorReservation(id structs.JobID, pod string) {
	s.Reservations = slices.DeleteFunc(slices.Clone(s.Reservations), func(r sched.Reservation) bool {
		return r.Kind == sched.ReserveExecutor && r.Job == id && r.Executor == pod
	})
}

// noticeUntil is when the preemption notice of victim v's task t ends,
// stopped at now: zero when the job asks for none.
func (s *State) noticeUntil(v *structs.Job, t *structs.Task, now time.Time) time.Time {
	d := v.PreemptNotice.Notice(s.Pools[t.Pool].MaxNotice())
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// maxNotice is the longest notice job j's own pool allows, and that
// pool: its project's pool, else the public pool.
func (s *State) maxNotice(j *structs.Job) (structs.PoolID, time.Duration) {
	for _, p := range s.Pools {
		if j.Project != "" && p.Project == j.Project {
			return p.Name, p.MaxNotice()
		}
	}
	return structs.PublicPool, structs.DefaultMaxPreemptNotice
}

// addResources is a + b (accelerators of b's type if a has none).
func addResources(a, b structs.Resources) structs.Resources {
	a.MilliCPU += b.MilliCPU
	a.Memory += b.Memory
	a.Accels += b.Accels
	if a.AccelType == "" {
		a.AccelType = b.AccelType
	}
	for k, n := range b.Devices {
		if a.Devices == nil {
			a.Devices = map[string]int64{}
		}
		a.Devices[k] += n
	}
	return a
}
