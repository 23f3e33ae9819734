package ui

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// nodesPerPage is the Nodes page's page size.
const nodesPerPage = 100

// holder is a task holding resources on a node.
type holder struct {
	task *structs.Task
	job  *structs.Job // nil when the state lost it (never expected)
}

// holders indexes the tasks that hold resources by node (read under the
// state's lock).
func holders(st *state.State) map[structs.NodeID][]holder {
	out := map[structs.NodeID][]holder{}
	for _, t := range st.Tasks {
		if t.State.HoldsResources() {
			out[t.Node] = append(out[t.Node], holder{task: t, job: st.Jobs[t.Job]})
		}
	}
	return out
}

// gpuCount is accelerators by what they are doing.
type gpuCount struct {
	Total, Used, Free, Quarantined int
}

func (c *gpuCount) add(o gpuCount) {
	c.Total += o.Total
	c.Used += o.Used
	c.Free += o.Free
	c.Quarantined += o.Quarantined
}

// nodeGPUs counts n's accelerators: quarantined ones count as such even
// while a task still holds them.
func nodeGPUs(n *structs.Node, hs []holder) gpuCount {
	var held structs.AccelMask
	for _, h := range hs {
		held |= h.task.Accels
	}
	q := n.QuarantinedMask()
	c := gpuCount{Total: int(n.Capacity.Accels), Quarantined: q.Count(), Used: (held &^ q).Count()}
	c.Free = max(0, c.Total-c.Used-c.Quarantined)
	return c
}

// useBar is a bar of accelerators in use of those in service: all in use
// is busy, not wrong, so it stays the colour of use.
func useBar(c gpuCount) bar {
	b := newBar(int64(c.Used), 0, int64(c.Total-c.Quarantined))
	b.Full = false
	return b
}

// gpuGroup is the accelerators of one cluster, pool and type.
type gpuGroup struct {
	Cluster, Pool, Type string
	Nodes               int
	NotReady            int // nodes not taking tasks (not ready, draining, quarantined)
	gpuCount
	Bar bar
}

// summarize groups the nodes' accelerators by cluster, pool and type.
func summarize(st *state.State, hs map[structs.NodeID][]holder) []gpuGroup {
	groups := map[[3]string]*gpuGroup{}
	for _, n := range st.Nodes {
		if n.Capacity.Accels == 0 {
			continue
		}
		key := [3]string{string(n.Cluster), string(n.PoolName()), orAny(n.Capacity.AccelType)}
		g := groups[key]
		if g == nil {
			g = &gpuGroup{Cluster: key[0], Pool: key[1], Type: key[2]}
			groups[key] = g
		}
		g.Nodes++
		if n.State != structs.NodeReady {
			g.NotReady++
		}
		g.add(nodeGPUs(n, hs[n.Name]))
	}
	out := make([]gpuGroup, 0, len(groups))
	for _, k := range slices.SortedFunc(maps.Keys(groups), func(a, b [3]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	}) {
		g := groups[k]
		g.Bar = useBar(g.gpuCount)
		out = append(out, *g)
	}
	return out
}

// cell is one accelerator of a node.
type cell struct {
	Index        int
	Class, Title string
	Job          string // the job holding it, when the user may see it
}

// palette is how many colours held cells cycle through, one per job.
const palette = 8

// colours gives each job on a page its own colour, in the order the jobs
// appear (so up to palette jobs on a page never share one).
type colours map[structs.JobID]string

func (c colours) of(id structs.JobID) string {
	if x, ok := c[id]; ok {
		return x
	}
	c[id] = "j" + strconv.Itoa(len(c)%palette)
	return c[id]
}

type heldBy struct {
	Job, Class, GPUs string
	Hidden           bool // another user's job: not named
}

type quarantineRow struct {
	Index         int
	Reason, Since string
}

type nodeRow struct {
	Name, Cluster, Pool, State, StateClass, Type string
	Cells                                        []cell
	Held                                         []heldBy
	Quarantined                                  []quarantineRow
	CPU, Memory, Devices, Tags                   string
	Taints                                       []string
	Tasks                                        int
	CPUBar                                       bar
}

func newNodeRow(n *structs.Node, hs []holder, v api.Viewer, colour colours, now time.Time) nodeRow {
	row := nodeRow{Name: string(n.Name), Cluster: string(n.Cluster), Pool: string(n.PoolName()), State: string(n.State),
		StateClass: "node-" + string(n.State), Tasks: len(hs)}
	var cpu, mem int64
	byIndex := map[int]holder{}
	held := map[structs.JobID][]int{}
	var hidden []int
	for _, h := range hs {
		cpu += h.task.Resources.MilliCPU
		mem += h.task.Resources.Memory
		for _, i := range h.task.Accels.Indices() {
			byIndex[i] = h
			if h.job != nil && v.Job(h.job) {
				held[h.job.ID] = append(held[h.job.ID], i)
			} else {
				hidden = append(hidden, i)
			}
		}
	}
	row.CPU = structs.FormatMilliCPU(cpu) + " / " + structs.FormatMilliCPU(n.Capacity.MilliCPU)
	row.Memory = structs.FormatBytes(mem) + " / " + structs.FormatBytes(n.Capacity.Memory)
	row.CPUBar = newBar(cpu, 0, n.Capacity.MilliCPU)
	row.CPUBar.Full = false // a busy node is no alarm
	quarantined := map[int]structs.Quarantine{}
	for _, q := range n.Quarantined {
		quarantined[q.Accel] = q
		row.Quarantined = append(row.Quarantined, quarantineRow{Index: q.Accel, Reason: q.Reason, Since: ago(q.Since, now)})
	}
	if n.Capacity.Accels > 0 {
		row.Type = orAny(n.Capacity.AccelType)
	}
	for i := range int(n.Capacity.Accels) {
		c := cell{Index: i, Class: "free", Title: fmt.Sprintf("%s %d: free", row.Type, i)}
		if h, ok := byIndex[i]; ok {
			if h.job != nil && v.Job(h.job) {
				c.Class, c.Job = "held "+colour.of(h.job.ID), string(h.job.ID)
				c.Title = fmt.Sprintf("%s %d: held by job %s (task %s, %s)", row.Type, i, h.job.ID, h.task.ID, h.task.State)
			} else {
				c.Class, c.Title = "held other", fmt.Sprintf("%s %d: held by a job you may not see", row.Type, i)
			}
		}
		if q, ok := quarantined[i]; ok {
			c.Class = "quarantined"
			c.Title = fmt.Sprintf("%s %d: quarantined since %s: %s", row.Type, i, stamp(q.Since), q.Reason)
		}
		row.Cells = append(row.Cells, c)
	}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		row.Held = append(row.Held, heldBy{Job: string(id), Class: colour.of(id), GPUs: indices(held[id])})
	}
	if len(hidden) > 0 {
		row.Held = append(row.Held, heldBy{Hidden: true, Class: "other", GPUs: indices(hidden)})
	}
	var devs []string
	for _, k := range slices.Sorted(maps.Keys(n.Capacity.Devices)) {
		devs = append(devs, fmt.Sprintf("%d× %s", n.Capacity.Devices[k], k))
	}
	row.Devices = strings.Join(devs, ", ")
	var tags []string
	for _, k := range slices.Sorted(maps.Keys(n.Tags)) {
		if n.Tags[k] == "" {
			tags = append(tags, k)
		} else {
			tags = append(tags, k+"="+n.Tags[k])
		}
	}
	row.Tags = strings.Join(tags, " ")
	for _, t := range n.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		row.Taints = append(row.Taints, s+":"+string(t.Effect))
	}
	return row
}

// indices writes accelerator indices as ranges: "0-3, 6".
func indices(is []int) string {
	slices.Sort(is)
	var out []string
	for i := 0; i < len(is); {
		j := i
		for j+1 < len(is) && is[j+1] == is[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%d-%d", is[i], is[j]))
		} else {
			out = append(out, strconv.Itoa(is[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ", ")
}

// nodeQuery is the Nodes page's filters and page.
type nodeQuery struct {
	Cluster, Pool, State, Type, Text string
	Page                             int
}

func parseNodeQuery(q url.Values) nodeQuery {
	nq := nodeQuery{Cluster: q.Get("cluster"), Pool: q.Get("pool"), State: q.Get("state"), Type: q.Get("type"), Text: strings.TrimSpace(q.Get("q"))}
	nq.Page, _ = strconv.Atoi(q.Get("page"))
	nq.Page = max(nq.Page, 1)
	return nq
}

func (q nodeQuery) url() string {
	v := url.Values{}
	for k, x := range map[string]string{"cluster": q.Cluster, "pool": q.Pool, "state": q.State, "type": q.Type, "q": q.Text} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if e := v.Encode(); e != "" {
		return "/ui/nodes?" + e
	}
	return "/ui/nodes"
}

// match: Type is an accelerator type, "cpu" (no accelerators) or
// "quarantined" (some accelerator quarantined).
func (q nodeQuery) match(n *structs.Node) bool {
	switch {
	case q.Cluster != "" && string(n.Cluster) != q.Cluster,
		q.Pool != "" && string(n.PoolName()) != q.Pool,
		q.State != "" && string(n.State) != q.State,
		q.Type == "cpu" && n.Capacity.Accels > 0,
		q.Type == "quarantined" && len(n.Quarantined) == 0,
		q.Type != "" && q.Type != "cpu" && q.Type != "quarantined" && (n.Capacity.Accels == 0 || orAny(n.Capacity.AccelType) != q.Type):
		return false
	}
	return q.Text == "" || strings.Contains(string(n.Name), q.Text)
}

type nodesView struct {
	Query                          nodeQuery
	Groups                         []gpuGroup
	Rows                           []nodeRow
	Pager                          pager
	Clusters, Pools, States, Types []string
}

// nodes: GET /ui/nodes: each node with its accelerators as cells (free,
// held by which job, quarantined and why), its state, taints and tags,
// by cluster, pool and name; filtered and paged on the server. Nodes are
// visible to every user (as GET /v1/nodes); the jobs holding them only
// to those who may see the jobs.
func (s *server) nodes(w http.ResponseWriter, r *http.Request, u *session) {
	q := parseNodeQuery(r.URL.Query())
	now := s.clock()
	v := nodesView{Query: q, States: []string{"ready", "not-ready", "draining", "quarantined"}}
	var rows []*structs.Node
	var hs map[structs.NodeID][]holder
	var view api.Viewer
	clusters, pools, types := map[string]bool{}, map[string]bool{}, map[string]bool{}
	s.store.Read(func(st *state.State) {
		view = api.ViewerOf(st, u.user)
		hs = holders(st)
		v.Groups = summarize(st, hs)
		for _, n := range st.Nodes {
			clusters[string(n.Cluster)] = true
			pools[string(n.PoolName())] = true
			if n.Capacity.Accels > 0 {
				types[orAny(n.Capacity.AccelType)] = true
			}
			if q.match(n) {
				rows = append(rows, n)
			}
		}
	})
	v.Clusters, v.Pools = slices.Sorted(maps.Keys(clusters)), slices.Sorted(maps.Keys(pools))
	v.Types = append(slices.Sorted(maps.Keys(types)), "cpu", "quarantined")
	slices.SortFunc(rows, func(a, b *structs.Node) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.PoolName(), b.PoolName()), cmp.Compare(a.Name, b.Name))
	})
	v.Pager = newPager(len(rows), q.Page, nodesPerPage, func(p int) string { n := q; n.Page = p; return n.url() })
	colour := colours{}
	for _, n := range rows[max(0, v.Pager.From-1):v.Pager.To] {
		v.Rows = append(v.Rows, newNodeRow(n, hs[n.Name], view, colour, now))
	}
	s.render(w, r, u, http.StatusOK, "nodes", "Nodes", v)
}
