package ui

import (
	"slices"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// overviewEvents is how many recent events the overview lists.
const overviewEvents = 15

// eventRow is one event as the tables show it.
type eventRow struct {
	Time, Ago, Job, Type, Class, Message, Task, Node, Related string
	Seq                                                       uint64
}

// newEventRow: Related links to the other job of a preemption when the
// viewer may see it (visible says).
func newEventRow(e structs.Event, now time.Time, visible func(structs.JobID) bool) eventRow {
	r := eventRow{Time: stamp(e.Time), Ago: ago(e.Time, now), Job: string(e.Job), Type: string(e.Type), Class: eventClass(e.Type),
		Message: e.Message, Task: string(e.Task), Node: string(e.Node), Seq: e.Seq}
	if e.Related != "" && visible(e.Related) {
		r.Related = string(e.Related)
	}
	return r
}

// eventClass colours an event type by what it means.
func eventClass(t structs.EventType) string {
	switch t {
	case structs.EventFailed, structs.EventLost, structs.EventQuarantined:
		return "ev-bad"
	case structs.EventPreempted, structs.EventPreempting, structs.EventRequeued, structs.EventRequeuing, structs.EventRestarting:
		return "ev-warn"
	case structs.EventStarted, structs.EventRunning, structs.EventSucceeded:
		return "ev-ok"
	case structs.EventCancelled, structs.EventStopped:
		return "ev-done"
	}
	return "ev-info"
}

// notable reports whether the overview lists an event: what someone
// watching the cluster wants to know about.
func notable(t structs.EventType) bool {
	switch t {
	case structs.EventPreempted, structs.EventFailed, structs.EventLost, structs.EventQuarantined:
		return true
	}
	return false
}

// recentEvents reads the newest notable events of the jobs v may see,
// newest first (structs.CompareEvents, reversed).
func recentEvents(st *state.State, v api.Viewer, n int) []structs.Event {
	var out []structs.Event
	for i := len(st.Recent) - 1; i >= 0 && len(out) < n; i-- {
		e := st.Recent[i]
		if j := st.Jobs[e.Job]; j != nil && notable(e.Type) && v.Job(j) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b structs.Event) int { return structs.CompareEvents(b, a) })
	return out
}
