package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// TopologyShortfall says, for a job that requires its replicas (a spark
// job: its executors, with its driver) in one domain of a topology
// level, how close the domains come.
type TopologyShortfall struct {
	Level  string `json:"level"`  // as the job names it: rack
	What   string `json:"what"`   // replicas or executors
	Needed int    `json:"needed"` // in one domain
	// Closest are the domains that come closest, at most topoClosest:
	// those that could hold them all when empty first, then the most
	// that fit now.
	Closest []DomainRoom `json:"closest,omitempty"`
	Domains int          `json:"domains"` // domains of the level with a node it may use
	Largest int          `json:"largest"` // the most that fit in one domain when empty
}

// DomainRoom is how many of a job's replicas fit in one domain: Free now,
// Of on its empty nodes.
type DomainRoom struct {
	Domain string `json:"domain"` // rack r3
	Free   int    `json:"free"`
	Of     int    `json:"of"`
}

// topoClosest is how many domains a topology reason names.
const topoClosest = 3

// topologyShortfall builds the reason for job c needing need of what in
// one domain of its level: now and ever count them per domain.
func (w *world) topologyShortfall(c *jobCtx, what string, need int, now, ever map[domain]int) *TopologyShortfall {
	ts := &TopologyShortfall{Level: c.topo.Required, What: what, Needed: need}
	type room struct {
		d         int32
		free, max int
	}
	rooms := map[int32]*room{}
	for d, n := range ever {
		if d.topo < 0 {
			continue
		}
		r := rooms[d.topo]
		if r == nil {
			r = &room{d: d.topo}
			rooms[d.topo] = r
		}
		// A domain in two pools the job may use: the pool where most fit.
		r.max = max(r.max, n)
		r.free = max(r.free, now[d])
		ts.Largest = max(ts.Largest, n)
	}
	ts.Domains = len(rooms)
	list := make([]*room, 0, len(rooms))
	for _, r := range rooms {
		list = append(list, r)
	}
	slices.SortFunc(list, func(a, b *room) int {
		ha, hb := a.max >= need, b.max >= need
		if ha != hb {
			if ha {
				return -1
			}
			return 1
		}
		if a.free != b.free {
			return b.free - a.free
		}
		if a.max != b.max {
			return b.max - a.max
		}
		return cmp.Compare(a.d, b.d)
	})
	for _, r := range list[:min(len(list), topoClosest)] {
		ts.Closest = append(ts.Closest, DomainRoom{Domain: w.topo.doms[r.d].name, Free: min(r.free, need), Of: r.max})
	}
	return ts
}

func (t *TopologyShortfall) String() string {
	l := structs.LevelName(t.Level)
	msg := fmt.Sprintf("needs %d %s in one %s", t.Needed, t.What, l)
	if len(t.Closest) == 0 {
		return msg + ": no node it may use is in one (label " + t.Level + ")"
	}
	var b strings.Builder
	for i, d := range t.Closest {
		if i == 0 {
			fmt.Fprintf(&b, "%s %s has %d free (of %d)", l, d.Domain, d.Free, d.Of)
		} else {
			fmt.Fprintf(&b, ", %s %d", d.Domain, d.Free)
		}
	}
	if t.Largest < t.Needed {
		fmt.Fprintf(&b, "; the largest holds %d", t.Largest)
	}
	return msg + ": " + b.String()
}

// checkLevel refuses a job whose topology names a level that no cluster
// it may use has (the cluster it is pinned to, else any), naming the
// levels there are.
func (w *world) checkLevel(j *structs.Job) error {
	if j.Topology == nil {
		return nil
	}
	level := j.Topology.Level()
	field := "topology.required"
	if j.Topology.Required == "" {
		field = "topology.preferred"
	}
	var have []string
	for cl, c := range w.clusters {
		if j.Cluster != "" && c != j.Cluster {
			continue
		}
		var lv []string
		if cl < len(w.topo.levels) {
			lv = w.topo.levels[cl]
		}
		if structs.LevelIndex(lv, level) >= 0 {
			return nil
		}
		what := "no topology levels"
		if len(lv) > 0 {
			what = "levels " + strings.Join(lv, ", ")
		}
		name := string(c)
		if name == "" {
			name = `""`
		}
		have = append(have, "cluster "+name+" has "+what)
	}
	slices.Sort(have)
	if len(have) == 0 {
		have = []string{"no cluster has nodes"}
	}
	return unknownf("%s: unknown topology level %q: %s (an admin sets them under topology.levels in the cluster spec)", field, level, strings.Join(have, "; "))
}

// topologyInvariant checks that every job requiring a topology level has
// all the tasks of its current attempt that hold resources (executors
// too) on nodes of one domain of that level.
func topologyInvariant(snap *Snapshot, nodes map[structs.NodeID]*structs.Node) []error {
	if len(snap.Topology) == 0 {
		return nil
	}
	type at struct {
		cluster structs.ClusterID
		path    string
	}
	first := map[structs.JobID]at{}
	var errs []error
	for _, t := range snap.Tasks {
		j, n := snap.Jobs[t.Job], nodes[t.Node]
		if j == nil || n == nil || j.Topology == nil || j.Topology.Required == "" || t.Attempt != j.Attempt || !t.State.HoldsResources() {
			continue
		}
		lv := snap.Topology[n.Cluster]
		l := structs.LevelIndex(lv, j.Topology.Required)
		var path []string
		for i := 0; i <= l; i++ {
			path = append(path, n.Tags[lv[i]])
		}
		here := at{n.Cluster, strings.Join(path, "/")}
		if l < 0 || n.Tags[lv[l]] == "" {
			errs = append(errs, fmt.Errorf("job %s requires one %s, and its task %s is on node %s, which is in none", j.ID, j.Topology.Required, t.ID, n.Name))
			continue
		}
		if f, ok := first[j.ID]; !ok {
			first[j.ID] = here
		} else if f != here {
			errs = append(errs, fmt.Errorf("job %s requires one %s, and its tasks are in %s %s and %s %s (task %s on node %s)",
				j.ID, j.Topology.Required, f.cluster, f.path, here.cluster, here.path, t.ID, n.Name))
		}
	}
	return errs
}
