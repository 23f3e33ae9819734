package ui

import (
	"cmp"
	"maps"
	"net/http"
	"slices"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// overviewRunning is how many running jobs the overview lists.
const overviewRunning = 10

type typeTotal struct {
	Type string
	gpuCount
	Bar bar
}

type quarantinedGPU struct {
	Node, Type, Reason, Since string
	Index                     int
}

type overviewView struct {
	Admin      bool
	Groups     []gpuGroup
	Types      []typeTotal
	Nodes      []stateCount // nodes by state
	Jobs       []stateCount // visible jobs by state
	Pending    []prioritySummary
	Running    []jobRow
	RunningN   int
	Quarantine []quarantinedGPU
	Events     []eventRow // notable, newest first
}

// overview: GET /ui/: accelerators in use, free and quarantined by
// cluster, pool and type; nodes by state; the user's jobs by state, the
// pending ones by priority with the longest wait, the running ones.
func (s *server) overview(w http.ResponseWriter, r *http.Request, u *session) {
	now := s.clock()
	v := overviewView{Admin: u.user.Admin}
	nodeStates := map[structs.NodeState]int{}
	s.store.Read(func(st *state.State) {
		view := api.ViewerOf(st, u.user)
		visible := func(id structs.JobID) bool { j := st.Jobs[id]; return j != nil && view.Job(j) }
		for _, e := range recentEvents(st, view, overviewEvents) {
			v.Events = append(v.Events, newEventRow(e, now, visible))
		}
		v.Groups = summarize(st, holders(st))
		for _, n := range st.Nodes {
			nodeStates[n.State]++
			for _, q := range n.Quarantined {
				v.Quarantine = append(v.Quarantine, quarantinedGPU{Node: string(n.Name), Type: orAny(n.Capacity.AccelType),
					Index: q.Accel, Reason: q.Reason, Since: ago(q.Since, now)})
			}
		}
	})
	slices.SortFunc(v.Quarantine, func(a, b quarantinedGPU) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Index, b.Index))
	})
	types := map[string]*gpuCount{}
	for _, g := range v.Groups {
		if types[g.Type] == nil {
			types[g.Type] = &gpuCount{}
		}
		types[g.Type].add(g.gpuCount)
	}
	for _, t := range slices.Sorted(maps.Keys(types)) {
		c := *types[t]
		v.Types = append(v.Types, typeTotal{Type: t, gpuCount: c, Bar: useBar(c)})
	}
	for _, st := range []structs.NodeState{structs.NodeReady, structs.NodeNotReady, structs.NodeDraining, structs.NodeQuarantined} {
		if nodeStates[st] > 0 {
			v.Nodes = append(v.Nodes, stateCount{State: string(st), Class: "node-" + string(st), N: nodeStates[st], URL: "/ui/nodes?state=" + string(st)})
		}
	}

	jobs, _ := s.visibleJobs(u, func(j *structs.Job) bool { return !j.State.Ended() })
	counts := map[structs.JobState]int{}
	oldest := map[structs.Priority]*structs.Job{}
	pending := map[structs.Priority]int{}
	var running []jobEntry
	for _, e := range jobs {
		j := e.job
		counts[j.State]++
		switch j.State {
		case structs.JobPending:
			pending[j.Priority]++
			if o := oldest[j.Priority]; o == nil || pendingSince(j).Before(pendingSince(o)) {
				oldest[j.Priority] = j
			}
		case structs.JobRunning:
			running = append(running, e)
		}
	}
	for _, st := range []structs.JobState{structs.JobPending, structs.JobScheduled, structs.JobRunning} {
		v.Jobs = append(v.Jobs, stateCount{State: string(st), Class: jobStateClass(st), N: counts[st], URL: "/ui/jobs?state=" + string(st)})
	}
	for _, p := range []structs.Priority{structs.PriorityHigh, structs.PriorityNormal, structs.PriorityLow} {
		if pending[p] > 0 {
			v.Pending = append(v.Pending, prioritySummary{Priority: p.String(), Class: priorityClass(p), N: pending[p],
				Oldest: ago(pendingSince(oldest[p]), now), Job: string(oldest[p].ID)})
		}
	}
	s.fillStarts(running)
	// The running jobs holding the most GPUs, then the longest running.
	slices.SortFunc(running, func(a, b jobEntry) int {
		return cmp.Or(cmp.Compare(gpus(b.job), gpus(a.job)), a.start.Compare(b.start), cmp.Compare(a.job.ID, b.job.ID))
	})
	v.RunningN = len(running)
	for _, e := range running[:min(len(running), overviewRunning)] {
		v.Running = append(v.Running, newJobRow(e, now))
	}
	s.render(w, r, u, http.StatusOK, "overview", "Overview", v)
}
