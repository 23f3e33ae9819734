// Package state is the coordinator's replicated state and the deterministic
// commands that change it. It performs no I/O and reads no clock: times,
// IDs and tokens travel inside the commands, so every server
// that applies the same log reaches the same state.
//
// Objects are copy-on-write: a command never mutates a Job, Task, Node or
// Pool in place, it stores a modified copy. A Snapshot can therefore share
// the pointers and be read by the scheduler while commands keep applying.
package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// State is everything the servers agree on.
type State struct {
	Index        uint64                                 `json:"index"` // last applied log index
	Clusters     map[structs.ClusterID]*structs.Cluster `json:"clusters"`
	Nodes        map[structs.NodeID]*structs.Node       `json:"nodes"`
	Pools        map[structs.PoolID]*structs.Pool       `json:"pools"`
	Quotas       map[structs.Scope]structs.ResourceList `json:"quotas"`
	Usage        map[structs.Scope]structs.ResourceList `json:"usage"`
	Jobs         map[structs.JobID]*structs.Job         `json:"jobs"`
	Tasks        map[structs.TaskID]*structs.Task       `json:"tasks"`
	Tokens       map[structs.TaskID]string              `json:"tokens"`   // allocation tokens: secret
	Requests     map[string]structs.JobID               `json:"requests"` // client request ID -> job
	Reservations []sched.Reservation                    `json:"reservations"`
	Ended        map[structs.JobID]time.Time            `json:"ended"` // when each ended job ended (retention)
	// Events is each job's event history; Recent the cluster's newest
	// events; EventSeq the last event's number (events.go).
	Events   map[structs.JobID]JobEvents `json:"events"`
	Recent   []structs.Event             `json:"recent"`
	EventSeq uint64                      `json:"eventSeq"`
	// Configs are the configs and secrets, by ConfigID.Key (configs.go);
	// secrets' values only sealed.
	Configs map[string]*structs.ConfigObject `json:"configs,omitempty"`
	// FairShare is how fair-share usage is counted (nil: the defaults);
	// FairUsage the usage; Weights each scope's fair-share weight, set
	// with its quota (missing: 1). fairshare.go.
	FairShare *structs.FairShare        `json:"fairShare,omitempty"`
	FairUsage sched.Usage               `json:"fairUsage,omitzero"`
	Weights   map[structs.Scope]float64 `json:"weights,omitempty"`

	// Derived indexes, rebuilt on demand (not serialised).
	byJob    map[structs.JobID][]structs.TaskID // tasks of each job
	live     map[jobName]structs.JobID          // jobs that have not ended, by namespace and name
	admitter *sched.Admitter                    // over Nodes and Pools; nil after they change
}

// New returns an empty state.
func New() *State {
	return &State{
		Clusters: map[structs.ClusterID]*structs.Cluster{},
		Nodes:    map[structs.NodeID]*structs.Node{},
		Pools:    map[structs.PoolID]*structs.Pool{},
		Quotas:   map[structs.Scope]structs.ResourceList{},
		Usage:    map[structs.Scope]structs.ResourceList{},
		Jobs:     map[structs.JobID]*structs.Job{},
		Tasks:    map[structs.TaskID]*structs.Task{},
		Tokens:   map[structs.TaskID]string{},
		Requests: map[string]structs.JobID{},
		Ended:    map[structs.JobID]time.Time{},
		Events:   map[structs.JobID]JobEvents{},
	}
}

// Clone returns a copy of s that shares the (copy-on-write) objects but
// not the maps: later commands do not change it. It is cheap enough to
// take under the FSM's read lock; read the copy after releasing it.
func (s *State) Clone() *State {
	c := *s
	c.Clusters = maps.Clone(s.Clusters)
	c.Nodes = maps.Clone(s.Nodes)
	c.Pools = maps.Clone(s.Pools)
	c.Quotas = maps.Clone(s.Quotas)
	c.Usage = maps.Clone(s.Usage)
	c.Jobs = maps.Clone(s.Jobs)
	c.Tasks = maps.Clone(s.Tasks)
	c.Tokens = maps.Clone(s.Tokens)
	c.Requests = maps.Clone(s.Requests)
	c.Ended = maps.Clone(s.Ended)
	c.Events = maps.Clone(s.Events) // the event slices are append-only: shared
	c.Configs = maps.Clone(s.Configs)
	c.FairUsage = s.FairUsage.Clone()
	c.Weights = maps.Clone(s.Weights)
	c.Reservations = slices.Clone(s.Reservations)
	c.byJob, c.live, c.admitter = nil, nil, nil // derived; rebuilt by the copy's own Apply if any
	return &c
}

// Snapshot returns the scheduler's view of s: sorted, sharing the
// (copy-on-write) objects, with every job that has not ended and every task
// that holds resources. It copies the maps, so later commands do not change
// it.
func (s *State) Snapshot() *sched.Snapshot {
	return ReadCycle(func(fn func(*State)) { fn(s) }).Snap
}

// declared is the set of declared clusters (sched.Snapshot.Clusters).
func (s *State) declared() map[structs.ClusterID]bool {
	out := make(map[structs.ClusterID]bool, len(s.Clusters))
	for id := range s.Clusters {
		out[id] = true
	}
	return out
}

// topology lists each cluster's topology levels (sched.Snapshot.Topology);
// nil when no cluster has any.
func (s *State) topology() map[structs.ClusterID][]string {
	var out map[structs.ClusterID][]string
	for id, c := range s.Clusters {
		if c.Topology != nil && len(c.Topology.Levels) > 0 {
			if out == nil {
				out = map[structs.ClusterID][]string{}
			}
			out[id] = c.Topology.Levels
		}
	}
	return out
}

// Pending lists the jobs that want replicas placed, in ID order: pending
// jobs, and services with fewer live tasks than replicas.
func (s *State) Pending() []*structs.Job {
	live := s.liveCount()
	var out []*structs.Job
	for _, id := range slices.Sorted(maps.Keys(s.Jobs)) {
		if j := s.Jobs[id]; wantsReplicas(j, live[id]) {
			out = append(out, j)
		}
	}
	return out
}

// liveCount counts, per job, replicas of its current attempt that hold
// resources and are not stopping (no executors).
func (s *State) liveCount() map[structs.JobID]int {
	live := map[structs.JobID]int{}
	for _, t := range s.Tasks {
		if j := s.Jobs[t.Job]; j != nil && t.Attempt == j.Attempt && t.State.HoldsResources() && t.State != structs.TaskStopping && t.Executor == "" {
			live[t.Job]++
		}
	}
	return live
}

// TasksOf returns job id's tasks (any state), by index then attempt.
// It only reads, so it is safe under a read lock.
func (s *State) TasksOf(id structs.JobID) []*structs.Task {
	var out []*structs.Task
	if s.byJob == nil { // not indexed yet (decoded, never applied to)
		for _, t := range s.Tasks {
			if t.Job == id {
				out = append(out, t)
			}
		}
	}
	for _, tid := range s.byJob[id] {
		if t := s.Tasks[tid]; t != nil {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Task) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return a.Attempt - b.Attempt
	})
	return out
}

// jobName is a job's name in its namespace: its project, or its owner
// when it has none. Names are unique among jobs that have not ended.
type jobName struct {
	project structs.ProjectID
	owner   structs.UserID // empty when project is set
	name    string
}

func nameOf(j *structs.Job) jobName {
	if j.Project != "" {
		return jobName{project: j.Project, name: j.Name}
	}
	return jobName{owner: j.Owner, name: j.Name}
}

// reindex rebuilds the derived indexes (write path only).
func (s *State) reindex() {
	s.live = map[jobName]structs.JobID{}
	for id, j := range s.Jobs {
		if !j.State.Ended() {
			s.live[nameOf(j)] = id
		}
	}
	s.byJob = map[structs.JobID][]structs.TaskID{}
	for _, tid := range slices.Sorted(maps.Keys(s.Tasks)) {
		t := s.Tasks[tid]
		s.byJob[t.Job] = append(s.byJob[t.Job], tid)
	}
}

// addTask stores a new task and indexes it.
func (s *State) addTask(t *structs.Task) {
	old := s.Tasks[t.ID]
	if old == nil {
		s.byJob[t.Job] = append(s.byJob[t.Job], t.ID)
	}
	s.Tasks[t.ID] = t
	if old == nil || !old.State.HoldsResources() {
		s.usagePlaced(t)
	}
}

// admit runs admission for j against the cached admitter.
func (s *State) admit(j *structs.Job) (sched.Admission, error) {
	if s.admitter == nil {
		snap := &sched.Snapshot{}
		for _, id := range slices.Sorted(maps.Keys(s.Nodes)) {
			snap.Nodes = append(snap.Nodes, s.Nodes[id])
		}
		for _, id := range slices.Sorted(maps.Keys(s.Pools)) {
			snap.Pools = append(snap.Pools, s.Pools[id])
		}
		snap.Topology, snap.Clusters = s.topology(), s.declared()
		s.admitter = sched.NewAdmitter(snap)
	}
	// An executor that never fits is told before quota, as a job is.
	if err := s.executorFits(j); err != nil {
		return sched.Admission{}, err
	}
	if err := s.cacheExists(j); err != nil {
		return sched.Admission{}, err
	}
	if err := s.volumesMountable(j); err != nil {
		return sched.Admission{}, err
	}
	return s.admitter.Admit(j, s.Quotas, s.Usage)
}

// volumesMountable refuses a job with volumes or scratch space when the
// coordinator has no kubernetes cluster: local clusters mount neither,
// so the job would run without them and lose what it writes there.
func (s *State) volumesMountable(j *structs.Job) error {
	if len(j.Volumes) == 0 && j.Scratch == nil {
		return nil
	}
	for _, c := range s.Clusters {
		if c.Backend == "kubernetes" {
			return nil
		}
	}
	field := "volumes"
	if len(j.Volumes) == 0 {
		field = "scratch"
	}
	return invalidf("%s: this coordinator has no kubernetes cluster, and local clusters mount no volumes or scratch space: "+
		"the job would run without them; leave %s out, or run it where a kubernetes cluster is "+
		"(coordinator/README.md, Persistent volumes)", field, field)
}

// cacheExists refuses a job that mounts the dataset cache (cache:) when
// no cluster it may use (the one it names, else any) has one: it would
// wait, holding its quota, until its pending timeout. A cluster it names
// that does not exist is Admit's to refuse.
func (s *State) cacheExists(j *structs.Job) error {
	if j.CacheMountPath == "" || j.Cluster != "" && s.Clusters[j.Cluster] == nil {
		return nil
	}
	var without []string
	for _, id := range slices.Sorted(maps.Keys(s.Clusters)) {
		if j.Cluster != "" && id != j.Cluster {
			continue
		}
		if s.Clusters[id].Redis != "" {
			return nil
		}
		without = append(without, string(id))
	}
	where, name := "no cluster is declared", "NAME"
	if len(without) == 1 {
		name = without[0]
	}
	if len(without) > 0 {
		where = "cluster " + strings.Join(without, ", ") + " has none"
		if len(without) > 1 {
			where = "clusters " + strings.Join(without, ", ") + " have none"
		}
	}
	return fmt.Errorf("cache: no cluster this job may use has a dataset cache (%s: no redis in the cluster config), so it %w: "+
		"an admin gives a cluster its Redis (coordinator cluster get -o yaml %s > c.yaml, add redis: HOST:PORT, coordinator cluster set -f c.yaml), "+
		"or leave out cache", where, sched.ErrUnsatisfiable, name)
}

// executorFits refuses a spark job whose executor no node could ever
// hold, whatever else runs: the hardware question Admit asks of a job,
// asked of one executor (its cores, memory plus overhead and GPUs) as a
// one-replica job of the same owner, project and cluster, low priority
// (the job's quota already covers its executors). Every node counts, a
// local cluster's as a Kubernetes cluster's: on the local backend Spark
// runs in local mode, its executors threads of the driver, yet the
// executor is still the shape the job is charged for and the Pod a
// Kubernetes cluster would have to place, so one larger than any node
// is a mistake in the spec wherever the job runs.
func (s *State) executorFits(j *structs.Job) error {
	if j.Spark == nil {
		return nil
	}
	e := j.Spark.ExecutorResources()
	x := &structs.Job{ID: j.ID, Name: j.Name, Kind: structs.KindCommand, Owner: j.Owner, Project: j.Project,
		Priority: structs.PriorityLow, Cluster: j.Cluster, Replicas: 1, Resources: e}
	if _, err := s.admitter.Admit(x, s.Quotas, s.Usage); err != nil {
		return fmt.Errorf("spark.executor asks for %s per executor (memory with its overhead), more than any node could hold: %w", e, err)
	}
	return nil
}

// CheckInvariants runs the scheduling core's invariant checker on s.
func (s *State) CheckInvariants() error { return sched.CheckInvariants(s.Snapshot()) }

// charge moves scope's usage from old to new, never below zero.
func (s *State) charge(scope structs.Scope, old, new structs.ResourceList) {
	if scope == "" || (len(old) == 0 && len(new) == 0) {
		return
	}
	u := s.Usage[scope].Clone()
	for k, v := range old {
		u[k] -= v
	}
	for k, v := range new {
		u[k] += v
	}
	for k, v := range u {
		if v <= 0 {
			delete(u, k) // clamped: CheckInvariants reports any mismatch
		}
	}
	s.Usage[scope] = u
}

// putJob stores a modified copy of job id made by edit.
func (s *State) putJob(id structs.JobID, edit func(j *structs.Job)) *structs.Job {
	j := *s.Jobs[id]
	edit(&j)
	s.Jobs[id] = &j
	return &j
}

// putTask stores a modified copy of task id made by edit.
func (s *State) putTask(id structs.TaskID, edit func(t *structs.Task)) *structs.Task {
	was := s.Tasks[id]
	t := *was
	edit(&t)
	s.Tasks[id] = &t
	s.usageEnded(was, &t)
	return &t
}

// endJob ends job id in state st with reason: its charge is released, its
// reservations dropped, its tasks that still run are told to stop.
func (s *State) endJob(id structs.JobID, st structs.JobState, reason string, now time.Time, stop structs.StopReason) {
	s.endJobSaying(id, st, reason, "", now, stop)
}

// endJobSaying is endJob whose event says said (e.g. who cancelled);
// empty: the state and reason.
func (s *State) endJobSaying(id structs.JobID, st structs.JobState, reason, said string, now time.Time, stop structs.StopReason) {
	j := s.Jobs[id]
	s.charge(j.ChargedScope, j.Charged, nil)
	s.putJob(id, func(j *structs.Job) {
		j.State, j.Reason, j.Charged, j.ChargedScope = st, reason, nil, ""
		j.EndedAt = now
		j.AttemptStop = "" // its end decides: nothing follows
		j.RequeueCause = ""
	})
	s.Ended[id] = now
	if s.live[nameOf(j)] == id {
		delete(s.live, nameOf(j))
	}
	s.dropReservations(id)
	s.endWarming(j, "", "never started: the job ended while its cache was warmed", stop, now) // nothing to stop
	s.putJob(id, func(j *structs.Job) { j.WarmUps = nil })
	stopping := 0
	for _, t := range s.TasksOf(id) {
		if t.State == structs.TaskScheduled || t.State == structs.TaskRunning {
			s.putTask(t.ID, func(t *structs.Task) { t.State, t.StopReason = structs.TaskStopping, stop })
			stopping++
		}
	}
	msg := strings.ToLower(string(st))
	switch {
	case said != "":
		msg = said
	case reason != "" && reason != msg:
		msg = reasonPhrase(msg, reason)
	}
	if stopping > 0 {
		msg += fmt.Sprintf("; stopping %d task(s)", stopping)
	}
	s.jobEvent(now, id, jobEnd[st], "%s", msg)
}

// jobEnd is the event of each end state.
var jobEnd = map[structs.JobState]structs.EventType{
	structs.JobSucceeded: structs.EventSucceeded, structs.JobFailed: structs.EventFailed, structs.JobCancelled: structs.EventCancelled,
}

// reasonPhrase joins a state word and its reason: "cancelled by u1"
// when the reason starts with the word, else "failed: PendingTimeout".
func reasonPhrase(word, reason string) string {
	if strings.HasPrefix(reason, word) {
		return reason
	}
	return word + ": " + reason
}

func (s *State) dropReservations(id structs.JobID) {
	s.Reservations = slices.DeleteFunc(slices.Clone(s.Reservations), func(r sched.Reservation) bool { return r.Job == id })
}
