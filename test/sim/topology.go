package main

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// The topology replay (trace=topology; test/README.md, make sim): gangs
// of whole 8-GPU nodes and the trace's single GPU tasks arrive and
// depart on the whole node list, arranged into racks; does a gang that
// prefers a rack get one, and at what cost in allocation?
//
//   - Nodes: the 1,523 of the node list, labelled by schedtest.Racks: each
//     GPU model's nodes, in file order, fill racks of 8, and its racks
//     blocks of 4 (CPU-only nodes likewise, as a model of their own).
//   - Jobs arrive as two Poisson streams over Hours, together asking
//     Demand × the cluster's GPUs in GPU-seconds per second, GangShare of
//     it in gangs: 2..16 replicas (uniform) × 8 GPUs of one model, drawn
//     by the models' count of 8-GPU nodes, running MinRun..MaxRun
//     (uniform); the rest single tasks drawn from the default pod list's
//     GPU tasks that ran (their cpu, memory, GPUs, models and run time),
//     those atom could place on the nodes. All are low priority: nothing
//     is preempted and no quota applies. A job that does not fit when it
//     arrives fails; a placed one departs after its run time.
//   - Policies: atom-topology (the core; gangs ask topology {preferred:
//     rack} of the levels block, rack), atom (the core, topology-blind),
//     best-fit (each replica on the feasible node left with the fewest
//     free GPUs, all or none).
//   - Figures, pooled over seeds: gangs_one_rack, of the placed gangs of
//     at most 8 replicas for which some rack had that many free nodes of
//     their model when they arrived, the share placed in one rack;
//     mean_racks_per_gang, the racks a placed gang spans; gpu_alloc_rate,
//     GPUs held over the window [Warmup, Hours), averaged over seeds.
//     Targets: atom-topology's gangs_one_rack ≥ 0.95 and above every
//     other policy's, its gpu_alloc_rate within 0.01 of atom's.

const traceTopology = "topology"

const policyAtomTopology = "atom-topology"

var topologyPolicies = []string{policyAtomTopology, policyAtom, policyBestFit}

// topoWorkload is what make sim replays.
var topoWorkload = struct {
	Hours, Warmup  int
	Demand         float64 // GPU-seconds asked per second, in cluster GPUs
	GangShare      float64 // of the demand, in gangs
	MinRun, MaxRun time.Duration
}{Hours: 6, Warmup: 1, Demand: 1.2, GangShare: 0.6, MinRun: 30 * time.Minute, MaxRun: 4 * time.Hour}

// streamTopology is the PCG stream of the topology replay's arrivals.
const streamTopology = 7

// topoJob is one arrival: a gang (Replicas × 8 GPUs of Model) or a single
// task (Tmpl, an index into the templates).
type topoJob struct {
	At, Run  time.Duration
	Replicas int // 0: a single task
	Model    string
	Tmpl     int
}

// topoArrivals draws the seed's arrivals (topoWorkload).
func topoArrivals(tmpls []template, nodes []*structs.Node, gpus int64, seed uint64) []topoJob {
	w := topoWorkload
	r := rand.New(rand.NewPCG(seed, streamTopology))
	var models []string // one entry per 8-GPU node: drawn uniformly
	for _, n := range nodes {
		if n.Capacity.Accels == 8 {
			models = append(models, n.Capacity.AccelType)
		}
	}
	slices.Sort(models)
	var single float64 // mean GPU-seconds of a single task
	for _, t := range tmpls {
		single += float64(t.GPUs) * t.Run.Seconds() / float64(len(tmpls))
	}
	gang := 9 * 8 * (w.MinRun + w.MaxRun).Seconds() / 2
	demand := w.Demand * float64(gpus)
	rates := [2]float64{(1 - w.GangShare) * demand / single, w.GangShare * demand / gang}
	h := time.Duration(w.Hours) * time.Hour
	var out []topoJob
	for kind, rate := range rates {
		for at := time.Duration(0); ; {
			at += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
			if at >= h {
				break
			}
			j := topoJob{At: at}
			if kind == 0 {
				j.Tmpl = r.IntN(len(tmpls))
				j.Run = tmpls[j.Tmpl].Run
			} else {
				j.Replicas, j.Model = 2+r.IntN(15), models[r.IntN(len(models))]
				j.Run = w.MinRun + time.Duration(r.Int64N(int64(w.MaxRun-w.MinRun)))
			}
			out = append(out, j)
		}
	}
	slices.SortStableFunc(out, func(a, b topoJob) int { return cmp.Compare(a.At, b.At) })
	return out
}

// topoPlacer is one policy of the topology replay.
type topoPlacer interface {
	// place puts job k now and returns its replicas' node indices, or
	// nil when it does not fit.
	place(k int, j *topoJob) ([]int, error)
	depart(k int)
	free(i int) int64 // GPUs free on node i
}

// topoResult is one replay: one policy, one seed.
type topoResult struct {
	Policy string
	Seed   uint64
	// Gangs placed; of at most 8 replicas with a rack that had room when
	// they arrived, and those of them placed in one rack; racks spanned.
	Placed, Room, OneRack, Racks int
	Rate                         float64
	Calls                        int
	CallTime                     time.Duration
}

// departure is a placed job's end.
type departure struct {
	At time.Duration
	K  int
}

type departures []departure

func (d departures) Len() int { return len(d) }
func (d departures) Less(i, j int) bool {
	return d[i].At < d[j].At || (d[i].At == d[j].At && d[i].K < d[j].K)
}
func (d departures) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *departures) Push(x any)   { *d = append(*d, x.(departure)) }
func (d *departures) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// replayTopology runs one policy over jobs on nodes (labelled racks).
func replayTopology(p topoPlacer, policy string, seed uint64, jobs []topoJob, tmpls []template, nodes []*structs.Node) (*topoResult, error) {
	w := topoWorkload
	res := &topoResult{Policy: policy, Seed: seed}
	var gpus, alloc int64
	for _, n := range nodes {
		gpus += n.Capacity.Accels
	}
	from, to := time.Duration(w.Warmup)*time.Hour, time.Duration(w.Hours)*time.Hour
	var gpuSeconds float64
	last := time.Duration(0)
	advance := func(t time.Duration) { // integrate alloc over [last, t] within the window
		a, b := max(last, from), min(t, to)
		if b > a {
			gpuSeconds += float64(alloc) * (b - a).Seconds()
		}
		last = t
	}
	held := map[int]int64{}
	var q departures
	for k := range jobs {
		j := &jobs[k]
		for len(q) > 0 && q[0].At <= j.At {
			d := heap.Pop(&q).(departure)
			advance(d.At)
			p.depart(d.K)
			alloc -= held[d.K]
			delete(held, d.K)
		}
		advance(j.At)
		room := j.Replicas > 0 && j.Replicas <= 8 && rackRoom(p, nodes, j)
		got, err := p.place(k, j)
		if err != nil {
			return nil, fmt.Errorf("trace=%s policy=%s seed=%d job %d: %w", traceTopology, policy, seed, k, err)
		}
		if got == nil {
			continue
		}
		per := tmpls[j.Tmpl].GPUs
		if j.Replicas > 0 {
			per = 8
			racks := map[string]bool{}
			for _, i := range got {
				racks[nodes[i].Tags["block"]+"/"+nodes[i].Tags["rack"]] = true
			}
			res.Placed++
			res.Racks += len(racks)
			if room {
				res.Room++
				if len(racks) == 1 {
					res.OneRack++
				}
			}
		}
		held[k] = per * int64(len(got))
		alloc += held[k]
		heap.Push(&q, departure{At: j.At + j.Run, K: k})
	}
	advance(to)
	res.Rate = gpuSeconds / (float64(gpus) * (to - from).Seconds())
	if a, ok := p.(*atomTopo); ok {
		res.Calls, res.CallTime = a.Calls, a.CallTime
	}
	return res, nil
}

// rackRoom reports whether some rack has j.Replicas nodes of j's model
// with all 8 GPUs free under p.
func rackRoom(p topoPlacer, nodes []*structs.Node, j *topoJob) bool {
	free := map[string]int{}
	for i, n := range nodes {
		if n.Capacity.AccelType == j.Model && n.Capacity.Accels == 8 && p.free(i) == 8 {
			r := n.Tags["block"] + "/" + n.Tags["rack"]
			if free[r]++; free[r] >= j.Replicas {
				return true
			}
		}
	}
	return false
}

// gangRequest is one replica of gang j: 8 GPUs of its model, 1 core and
// 1 GiB (within the CPU and memory bound to 8 GPUs on every node).
func gangRequest(j *topoJob) request {
	return request{Name: "gang", MilliCPU: 1000, Memory: 1 << 30, GPUs: 8, Models: []string{j.Model}}
}

// bestFitTopo is the best-fit baseline over raw requests.
type bestFitTopo struct {
	b      *baseline
	tmpls  []template
	placed map[int][]placement
}

func (t *bestFitTopo) place(k int, j *topoJob) ([]int, error) {
	r, n := &t.tmpls[j.Tmpl].request, 1
	if j.Replicas > 0 {
		g := gangRequest(j)
		r, n = &g, j.Replicas
	}
	var got []int
	for range n {
		i := t.b.take(r)
		if i < 0 {
			for _, x := range got {
				t.b.release(r, x)
			}
			return nil, nil
		}
		got = append(got, i)
		t.placed[k] = append(t.placed[k], placement{Req: r, Node: i})
	}
	return got, nil
}

func (t *bestFitTopo) depart(k int) {
	for _, pl := range t.placed[k] {
		t.b.release(pl.Req, pl.Node)
	}
	delete(t.placed, k)
}

func (t *bestFitTopo) free(i int) int64 { return t.b.free[i].GPUs }

// atomTopo places each arrival through the scheduling core, as one low
// job pending alone on a snapshot of every task placed and not departed.
type atomTopo struct {
	schedule scheduleFunc
	snap     *sched.Snapshot
	nodes    []*structs.Node
	byName   map[structs.NodeID]int
	tmpls    []template
	topology bool // gangs prefer a rack
	used     []int64
	tasks    map[int][]*structs.Task
	pos      map[*structs.Task]int // index in snap.Tasks
	Calls    int
	CallTime time.Duration
}

func newAtomTopo(nodes []*structs.Node, tmpls []template, schedule scheduleFunc, topology bool) *atomTopo {
	a := &atomTopo{schedule: schedule, nodes: nodes, tmpls: tmpls, topology: topology,
		byName: map[structs.NodeID]int{}, used: make([]int64, len(nodes)),
		tasks: map[int][]*structs.Task{}, pos: map[*structs.Task]int{},
		snap: &sched.Snapshot{Nodes: nodes, Jobs: map[structs.JobID]*structs.Job{}}}
	if topology {
		a.snap.Topology = map[structs.ClusterID][]string{"": schedtest.RackLevels}
	}
	for i, n := range nodes {
		a.byName[n.Name] = i
	}
	return a
}

func (a *atomTopo) place(k int, j *topoJob) ([]int, error) {
	id := structs.JobID(fmt.Sprintf("t-%06d", k))
	var job *structs.Job
	if j.Replicas > 0 {
		g := gangRequest(j)
		job = &structs.Job{ID: id, Name: string(id), Kind: structs.KindMPI, Owner: simOwner, Replicas: j.Replicas,
			Resources: structs.Resources{MilliCPU: g.MilliCPU, Memory: g.Memory, Accels: 8, AccelType: j.Model}}
		if a.topology {
			job.Topology = &structs.JobTopology{Preferred: "rack"}
		}
	} else {
		job = a.tmpls[j.Tmpl].job(id, simOwner)
	}
	job.Priority, job.State, job.SubmitTime, job.PendingSince = structs.PriorityLow, structs.JobPending, simNow, simNow
	a.snap.Index++
	a.snap.Jobs[id] = job
	start := time.Now()
	plan := a.schedule(a.snap, sched.Input{Pending: []*structs.Job{job}, Now: simNow})
	a.CallTime += time.Since(start)
	a.Calls++
	delete(a.snap.Jobs, id)
	if len(plan.Preemptions) > 0 {
		return nil, fmt.Errorf("plan preempts %s although no job may", plan.Preemptions[0].Victim)
	}
	var got []int
	for _, pl := range plan.Placements {
		if pl.Job != id || len(pl.Tasks) != job.Replicas {
			return nil, fmt.Errorf("plan places %d replicas of job %s, not %d of %s", len(pl.Tasks), pl.Job, job.Replicas, id)
		}
		for _, tp := range pl.Tasks {
			i, ok := a.byName[tp.Node]
			if !ok || a.used[i]+tp.Resources.Accels > a.nodes[i].Capacity.Accels {
				return nil, fmt.Errorf("plan puts %d GPUs on node %s, which has %d of %d in use", tp.Resources.Accels, tp.Node, a.used[i], a.nodes[i].Capacity.Accels)
			}
			t := &structs.Task{ID: structs.MakeTaskID(id, tp.Index, 0), Job: id, Index: tp.Index, Node: tp.Node, Pool: tp.Pool,
				Priority: structs.PriorityLow, State: structs.TaskRunning, Resources: tp.Resources, Accels: tp.Accels}
			a.pos[t] = len(a.snap.Tasks)
			a.snap.Tasks = append(a.snap.Tasks, t)
			a.tasks[k] = append(a.tasks[k], t)
			a.used[i] += tp.Resources.Accels
			got = append(got, i)
		}
	}
	return got, nil
}

func (a *atomTopo) depart(k int) {
	for _, t := range a.tasks[k] {
		p, last := a.pos[t], len(a.snap.Tasks)-1
		moved := a.snap.Tasks[last]
		a.snap.Tasks[p], a.pos[moved] = moved, p
		a.snap.Tasks = a.snap.Tasks[:last]
		delete(a.pos, t)
		a.used[a.byName[t.Node]] -= t.Resources.Accels
	}
	delete(a.tasks, k)
}

func (a *atomTopo) free(i int) int64 { return a.nodes[i].Capacity.Accels - a.used[i] }
