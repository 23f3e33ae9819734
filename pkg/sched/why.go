package sched

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Why explains, as data, why a job is not placed. Counts are over the nodes
// of the clusters and pools the job may use.
type Why struct {
	// NeverFits is true when the job cannot fit even on empty nodes ("can
	// never fit"), false when it does not fit now.
	NeverFits bool   `json:"neverFits"`
	Message   string `json:"message"` // one line for people
	// Quota is set when public quota stops a shape from running.
	Quota *QuotaShortfall `json:"quota,omitempty"`
	// Nodes is how many nodes were considered.
	Nodes int `json:"nodes"`
	// Fit is how many of them a replica fits on now; Fit plus the counts
	// in Filtered add up to Nodes.
	Fit int `json:"fit"`
	// Filtered counts nodes rejected by each reason ("selector fabric=ib",
	// "taint maint=true:NoSchedule", "accelerator type B", "not ready").
	Filtered []Count `json:"filtered,omitempty"`
	// Notes are facts that are not node counts ("node n9 does not exist",
	// "at most 8 accelerators on one node, 9 asked per replica", "a gang
	// runs in one pool of one cluster").
	Notes []string `json:"notes,omitempty"`
	// Fragmentation is set when enough accelerators are free in total but
	// not enough on nodes where a replica needs them.
	Fragmentation *Fragmentation `json:"fragmentation,omitempty"`
	// Gang is set for gangs: how many replicas fit now of how many needed.
	Gang *GangShortfall `json:"gang,omitempty"`
	// Spark is set for a spark job whose driver waits with its minimum
	// executors (one gang): how many of them fit, and where not. Then
	// Fit and Filtered count nodes for the driver.
	Spark *SparkShortfall `json:"spark,omitempty"`
	// Topology is set for a job that requires one domain of a topology
	// level: how close the domains come.
	Topology *TopologyShortfall `json:"topology,omitempty"`
	// Waiting names what the job waits for (reservations, preemptions).
	Waiting string `json:"waiting,omitempty"`
}

// Count is a number of nodes rejected for one reason.
type Count struct {
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
}

// QuotaShortfall is what a quota check found.
type QuotaShortfall struct {
	Scope structs.Scope       `json:"scope"`
	Key   structs.ResourceKey `json:"key"`
	Asked int64               `json:"asked"`
	Used  int64               `json:"used"`
	Limit int64               `json:"limit"`
}

func (q *QuotaShortfall) String() string {
	return fmt.Sprintf("quota exceeded for %s: %s quota %s, in use %s, requested %s",
		q.Scope, q.Key, formatKey(q.Key, q.Limit), formatKey(q.Key, q.Used), formatKey(q.Key, q.Asked))
}

// Fragmentation: Nodes nodes have accelerators of the type free, at most
// MaxFree on one, TotalFree in all; Needed are needed on one node.
type Fragmentation struct {
	AccelType string `json:"accelType"`
	Nodes     int    `json:"nodes"`   // nodes with some free
	MaxFree   int64  `json:"maxFree"` // most free on one node
	TotalFree int64  `json:"totalFree"`
	Needed    int64  `json:"needed"` // per replica
	// Free names the nodes with the most free, most first (ties in node
	// order), at most fragNodes of them.
	Free []NodeFree `json:"free,omitempty"`
}

// NodeFree is how many accelerators are free on one node.
type NodeFree struct {
	Node structs.NodeID `json:"node"`
	Free int64          `json:"free"`
}

// fragNodes is how many nodes a fragmentation reason names.
const fragNodes = 5

// add counts free accelerators on node n.
func (f *Fragmentation) add(n structs.NodeID, free int64) {
	if free <= 0 {
		return
	}
	f.Nodes++
	f.MaxFree = max(f.MaxFree, free)
	f.TotalFree += free
	i := len(f.Free)
	for i > 0 && f.Free[i-1].Free < free {
		i--
	}
	if i < fragNodes {
		f.Free = slices.Insert(f.Free, i, NodeFree{n, free})
		f.Free = f.Free[:min(len(f.Free), fragNodes)]
	}
}

func (f *Fragmentation) String() string {
	var b strings.Builder
	var listed int64
	for i, n := range f.Free {
		if i == 0 {
			fmt.Fprintf(&b, "%s: %d free %s", n.Node, n.Free, f.AccelType)
		} else {
			fmt.Fprintf(&b, ", %s: %d", n.Node, n.Free)
		}
		listed += n.Free
	}
	if more := f.Nodes - len(f.Free); more > 0 {
		fmt.Fprintf(&b, ", and %d more %s with %d free", more, plural(more, "node", "nodes"), f.TotalFree-listed)
	}
	fmt.Fprintf(&b, "; %d needed on one node", f.Needed)
	return b.String()
}

// GangShortfall: Fit of Needed replicas fit now, MaxFit on empty nodes,
// counted in one pool of one cluster for a gang (Together), in one
// cluster for a service's minAvailable.
type GangShortfall struct {
	Needed   int  `json:"needed"`
	Fit      int  `json:"fit"`
	MaxFit   int  `json:"maxFit"`
	Together bool `json:"together"` // a gang: all replicas at once
}

func formatKey(k structs.ResourceKey, v int64) string {
	switch k {
	case structs.KeyCPU:
		return structs.FormatMilliCPU(v)
	case structs.KeyMemory:
		return structs.FormatBytes(v)
	}
	return fmt.Sprintf("%d", v)
}

// render builds w.Message from its fields.
func (w *Why) render(prefix string) {
	var parts []string
	if prefix != "" {
		parts = append(parts, prefix)
	}
	if w.Quota != nil {
		parts = append(parts, w.Quota.String())
	}
	if g := w.Gang; g != nil {
		what := "gang needs %d replicas"
		if !g.Together {
			what = "needs %d replicas at once (minAvailable)"
		}
		parts = append(parts, fmt.Sprintf(what+": %d fit now, at most %d on empty nodes", g.Needed, g.Fit, g.MaxFit))
	}
	if w.Spark != nil {
		parts = append(parts, w.Spark.String())
	}
	if w.Topology != nil {
		parts = append(parts, w.Topology.String())
	}
	if w.Fragmentation != nil {
		parts = append(parts, w.Fragmentation.String())
	}
	sort.SliceStable(w.Filtered, func(i, j int) bool {
		if w.Filtered[i].Nodes != w.Filtered[j].Nodes {
			return w.Filtered[i].Nodes > w.Filtered[j].Nodes
		}
		return w.Filtered[i].Reason < w.Filtered[j].Reason
	})
	if len(w.Filtered) > 0 {
		var f []string
		for _, c := range w.Filtered {
			f = append(f, fmt.Sprintf("%d %s", c.Nodes, c.Reason))
		}
		what := ""
		if w.Spark != nil {
			what = "for the driver " // the executors' counts are in Spark
		}
		parts = append(parts, fmt.Sprintf("%s%d/%d nodes fit: %s", what, w.Fit, w.Nodes, strings.Join(f, ", ")))
	}
	parts = append(parts, w.Notes...)
	if w.Waiting != "" {
		parts = append(parts, w.Waiting)
	}
	w.Message = strings.Join(parts, "; ")
}
