package sched

import (
	"github.com/atom-sched/atom/pkg/structs"
)

// findNode returns the best node at pool level lvl for one replica of c, or
// -1. First the least waste of bound CPU and memory (see levels); within a
// tier of equal waste, best fit: the node with the fewest free accelerators
// (CPU nodes: the fewest free cores) that still holds the replica, so large
// holes stay whole for large replicas; ties go to the group order (type
// name) and the bucket order.
// Held to a topology domain (c.dom), only its nodes.
func (w *world) findNode(c *jobCtx, lvl int) int32 {
	r := c.shape.Resources
	groups := c.levels[lvl]
	if len(groups) == 0 {
		return -1
	}
	if c.nodePin >= 0 {
		ni := c.nodePin
		for _, gi := range groups {
			if w.nodes[ni].group == gi && w.fitsNode(c, ni) {
				return ni
			}
		}
		return -1
	}
	need := 0
	if r.Accels > 0 {
		need = int(r.Accels)
	} else {
		need = int(r.MilliCPU / 1000)
	}
	for _, tier := range c.tiers[lvl] {
		top := 0
		for _, gi := range tier {
			top = max(top, w.groups[gi].idx.maxKey())
		}
		// Keys are clamped to each group's last bucket (CPU nodes with more
		// than maxCPUKey free cores share it), so start from the clamped need.
		// Held to a topology domain, walk only the group's nodes there.
		for k := min(need, top); k <= top; k++ {
			for _, gi := range tier {
				idx := w.idxOf(c, gi)
				if idx == nil || k > idx.maxKey() || (k < need && k < idx.maxKey()) {
					continue
				}
				for _, ni := range idx.b[k] {
					if w.fitsNode(c, ni) {
						return ni
					}
				}
			}
		}
	}
	return -1
}

// fitsNode reports whether one replica of c may go on node ni now: no
// node rule rejects it (rules.go).
func (w *world) fitsNode(c *jobCtx, ni int32) bool { return w.fails(c, ni, askNow) == rOK }

// placeReplicas tries to place replicas idx of c at pool level lvl. With
// all set it places all or none; otherwise as many as fit. It returns the
// assignments made (already applied to w).
func (w *world) placeReplicas(c *jobCtx, lvl int, n int, all bool) []assignment {
	var out []assignment
	used := len(c.used)
	for range n {
		ni := w.findNode(c, lvl)
		if ni < 0 {
			if all {
				for i := len(out) - 1; i >= 0; i-- {
					w.undo(out[i])
				}
				c.used = c.used[:used]
				return nil
			}
			break
		}
		out = append(out, w.take(ni, w.alloc(ni, c.shape.Resources)))
		if c.j.Affinity.SpreadReplicas {
			c.used = append(c.used, ni)
		}
	}
	return out
}

// missing returns the replica indices of j (for shape s) without a live
// task, or one being stopped for a preemptor (a service's: it is placed
// again once stopped).
func (w *world) missing(j *structs.Job, replicas int) []int {
	live := w.liveOf[j.ID]
	if len(live) == 0 {
		for len(w.seq) < replicas {
			w.seq = append(w.seq, len(w.seq))
		}
		return w.seq[:replicas:replicas]
	}
	have := make(map[int]bool, len(live))
	for _, k := range live {
		have[w.tasks[k].t.Index] = true
	}
	for _, k := range w.stoppingOf[j.ID] {
		have[w.tasks[k].t.Index] = true
	}
	var out []int
	for i := 0; i < replicas; i++ {
		if !have[i] {
			out = append(out, i)
		}
	}
	return out
}
