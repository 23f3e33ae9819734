// Package backend is what the coordinator's leader and the backends that
// run its tasks (local processes, Kubernetes Pods) say to each other:
//
//	leader ──Start(Launch)─────────▶ backend     a launch record: task, job, token,
//	                                             the gang's tasks, the cluster
//	leader ──Stop(Halt)────────────▶ backend     a halt record: task, grace, the cluster
//	leader ──Capabilities()────────▶ backend     adopting, volume claims
//	backend ──Report(task, token, event)──▶ EventSink (the server, in process)
//	backend ──Task(id), IsLeader, ...─────▶ Host (the server, in process)
//
// A backend gets from the Launch and the Halt everything it needs of the
// state to start and stop a task, reports what it sees of its tasks to the EventSink, and
// asks the Host the little its own loops need of the state (a sweep, a
// log read), so it can be tested with a small fake instead of a server.
package backend

import (
	"errors"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// Backend launches and stops tasks. The leader calls it after each
// committed plan and after a leader change, so Start and Stop must be
// idempotent: starting a started task or stopping a stopped one
// succeeds. A leader starts only the tasks it placed itself (a Start on
// one server's backend cannot see what another server's started), unless
// the backend adopts them (Capabilities.Adopts); it stops every stopping
// task. The leader never calls a backend while it holds the state's lock,
// and Backends are safe for concurrent use.
type Backend interface {
	Start(l Launch) error
	Stop(h Halt) error
	// Capabilities says what the backend does besides Start and Stop.
	Capabilities() Capabilities
}

// Launch is one allocation to start, as the leader read it from the
// state. Task, Job and Cluster are shared, read-only state objects.
type Launch struct {
	Task  *structs.Task
	Job   *structs.Job
	Token string // the allocation token
	// Gang lists the tasks of a gang job's gang (its tasks of Task's
	// attempt, Spark executors not counted), Task included, and
	// GangWhole says whether none of them is stopping or has ended. nil
	// for a job that is no gang: the task is a gang of its own.
	Gang      []structs.TaskID
	GangWhole bool
	// Cluster is the cluster of the task's node; nil when the node or the
	// cluster is gone.
	Cluster *structs.Cluster
}

// Halt is one task to stop, as the leader read it from the state.
// Cluster is a shared, read-only state object.
type Halt struct {
	Task structs.TaskID
	// Grace is how long the task has to end once told to (SIGTERM)
	// before it is killed.
	Grace time.Duration
	// Cluster is the cluster of the task's node; nil when the node or the
	// cluster is gone.
	Cluster *structs.Cluster
}

// Members returns the launch's gang, Task included, and whether it is
// whole: Task alone and whole for a job that is no gang.
func (l Launch) Members() ([]structs.TaskID, bool) {
	if l.Gang == nil {
		return []structs.TaskID{l.Task.ID}, true
	}
	for _, id := range l.Gang {
		if id == l.Task.ID {
			return l.Gang, l.GangWhole
		}
	}
	return append(append([]structs.TaskID(nil), l.Gang...), l.Task.ID), l.GangWhole
}

// Capabilities are what a backend can do besides Start and Stop; a nil
// field is a capability it lacks.
type Capabilities struct {
	// Adopts says whether Start may be called for launch l although
	// another server placed it: what the placing server did is in a place
	// every server sees (a Kubernetes Pod, named from the task), so Start
	// finds it and completes it (a gang's Pods created but not bound are
	// bound, the missing ones created first) and never runs the
	// allocation twice. A new leader starts the Scheduled tasks it
	// inherited that its backend adopts, and leaves the others to the
	// heartbeat TTL.
	Adopts func(l Launch) bool
	// Claims returns, for every cluster whose persistent volume claims
	// the backend knows, which of names it holds (an empty map for a
	// cluster holding none): a job's volumes pin it to a cluster that
	// holds them all. Without it, volumes are not checked.
	Claims func(names []string) map[structs.ClusterID]map[string]bool
}

// EventSink is where a backend reports what it sees of the tasks it runs
// (a process's exit, a Pod's phase): the server, in process, trusted.
// token is the allocation token the task was launched with, or "" for
// the task's current allocation (a task the backend did not start
// itself, seen after a restart). ev.State is as in a heartbeat: "",
// Running, Succeeded, Failed or Lost.
type EventSink interface {
	Report(id structs.TaskID, token string, ev structs.TaskEvent) error
}

// Host is what a backend may ask of the server that runs it, besides the
// launches it is given: what the state knows of a task, and whether and
// since when this server leads. A backend's own loops need it: a
// Kubernetes backend's sweep deletes the Pods of tasks the state knows
// ended, only on the leader, and declares no task lost before the leader
// has led for a heartbeat TTL. The server implements it (*server.Server);
// a test gives a backend a small fake. Its methods are safe for
// concurrent use; a backend calls them outside any state read.
type Host interface {
	// Task returns what the state knows of task id: its current
	// allocation's token ("" when the state does not know the task) and
	// whether it holds resources (Scheduled, Running or Stopping).
	Task(id structs.TaskID) (token string, live bool)
	// IsLeader reports whether this server is the Raft leader now.
	IsLeader() bool
	// LeadingSince returns when this server's current term of leader
	// work began and true, or false when it does not lead: every task
	// gets a full HeartbeatTTL from then before anything declares it
	// lost.
	LeadingSince() (time.Time, bool)
	// HeartbeatTTL is how long a task may stay silent before it is lost.
	HeartbeatTTL() time.Duration
}

// ErrClosed is a Start refused because the backend has stopped its
// tasks: the server is shutting down (not worth a warning).
var ErrClosed = errors.New("backend closed: the server is shutting down")

// ErrTaskEnded: a report for a task that has ended (it may have been
// declared Lost); the backend should stop what still runs for it.
var ErrTaskEnded = errors.New("task has ended")
