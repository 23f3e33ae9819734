package sched

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/atom-sched/atom/pkg/structs"
)

// ErrNoRoom says an executor does not fit now; it may once room frees up.
var ErrNoRoom = errors.New("does not fit now")

// ExecutorPod is what one executor Pod itself asks for (its Pod spec may
// ask less than, or be placed more narrowly than, its job's executor): its
// requests, and the nodes its own node selector, required node affinity
// and tolerations allow. The executor is placed and held at its requests,
// at most its job's executor (Spark.ExecutorResources, which the job was
// charged for), on a node that both its job and its Pod allow.
type ExecutorPod struct {
	// Requests: MilliCPU, Memory and Accels (nvidia.com/gpu); the type of
	// its GPUs is its job's executor's.
	Requests structs.Resources
	// NodeSelector is the Pod's spec.nodeSelector.
	NodeSelector map[string]string
	// Affinity is the Pod's required node affinity
	// (requiredDuringSchedulingIgnoredDuringExecution); nil: none.
	Affinity *corev1.NodeSelector
	// Tolerations are the Pod's: a node's NoSchedule and NoExecute taints
	// must be tolerated by them and by the job's.
	Tolerations []corev1.Toleration
	// Name is the Pod's name: the room reserved for it
	// (PreemptForExecutor) is its own.
	Name string
}

// executorResources is what executor Pod p of job j holds: its requests,
// with the job's GPU type; an error when it asks more than j's executor.
func executorResources(j *structs.Job, p ExecutorPod) (structs.Resources, error) {
	want, r := j.Spark.ExecutorResources(), p.Requests
	if r.MilliCPU > want.MilliCPU || r.Memory > want.Memory || r.Accels > want.Accels || r.MilliCPU < 0 || r.Memory < 0 || r.Accels < 0 {
		return structs.Resources{}, fmt.Errorf("the executor Pod asks for cpu %dm, memory %d bytes, %d GPUs: more than job %s's executor (%s), which its quota was charged for",
			r.MilliCPU, r.Memory, r.Accels, j.ID, want)
	}
	res := structs.Resources{MilliCPU: r.MilliCPU, Memory: r.Memory, Accels: r.Accels}
	if r.Accels > 0 {
		res.AccelType = want.AccelType
	}
	return res, nil
}

// PlaceExecutor picks the node for one more executor of spark job j, whose
// driver is task driver, on snap: the node the core would give a
// one-replica job of j's priority, project, tolerations, selector (plus the
// executor's nodeSelector) and affinity to other jobs asking what executor
// Pod pod requests, in the driver's cluster and pool (an executor is
// charged with its driver: in a project pool neither is), among the nodes
// pod's own node selector, required node affinity and tolerations allow.
// Reservations of other jobs and of j's other executors are respected;
// the room reserved for pod (PreemptForExecutor) is its own, and so is
// the room held for j's minimum executors (ReserveMinExecutors), which it
// takes first when its Pod allows (the state then drops one: TakeHeld).
// It returns the placement
// (Index and ID left for the state to set) or an error matching ErrNoRoom,
// saying why (no node meets the Pod's own constraints, or none has room).
// The executor limit and quota are not its business: the job's charge
// covers its most executors, and the state counts them.
func PlaceExecutor(snap *Snapshot, j *structs.Job, driver *structs.Task, pod ExecutorPod) (TaskPlacement, error) {
	e, err := newExecutorCtx(snap, j, driver, pod)
	if err != nil {
		return TaskPlacement{}, err
	}
	w, c := e.w, e.c
	// The room held for the job's minimum executors first, in order, on
	// the nodes its Pod allows; then wherever it fits best.
	for k := range w.holds {
		if r := &w.holds[k]; r.Kind == ReserveMinExecutors && r.Job == j.ID {
			if a, ok := w.intoHeld(c, r); ok {
				return TaskPlacement{Index: -1, Node: r.Node, Pool: driver.Pool, Resources: a.res, Accels: a.accels}, nil
			}
		}
	}
	// In the driver's topology domain when its job asks for one
	// (executorDomains).
	for _, d := range e.doms {
		c.setDom(d)
		if as := w.placeReplicas(c, 0, 1, true); len(as) == 1 {
			a := as[0]
			return TaskPlacement{Index: -1, Node: w.nodes[a.ni].n.Name, Pool: driver.Pool, Resources: a.res, Accels: a.accels}, nil
		}
	}
	return TaskPlacement{}, e.noRoom()
}

// executorCtx is one executor Pod to place: a world of its own (the nodes
// its Pod does not allow are not ready there) and the context of a
// one-replica job like its job, in its driver's cluster and pool.
type executorCtx struct {
	w     *world
	c     *jobCtx
	j     *structs.Job
	res   structs.Resources
	where string // "pool P of cluster C"
	ex    podExclusion
	doms  []int32 // the topology domains it may go to, in order (executorDomains)
}

func newExecutorCtx(snap *Snapshot, j *structs.Job, driver *structs.Task, pod ExecutorPod) (*executorCtx, error) {
	if j.Spark == nil {
		return nil, fmt.Errorf("job %s is of kind %s: only spark jobs have executors", j.ID, j.Kind)
	}
	res, err := executorResources(j, pod)
	if err != nil {
		return nil, err
	}
	w := newWorld(snap)
	w.holdReservations(snap)
	ni, ok := w.byName[driver.Node]
	if !ok {
		return nil, fmt.Errorf("the driver of job %s is on node %s, which no longer exists", j.ID, driver.Node)
	}
	pool, ok := w.poolIdx[driver.Pool]
	if !ok {
		return nil, fmt.Errorf("the driver of job %s is in pool %s, which no longer exists", j.ID, driver.Pool)
	}
	cl := w.nodes[ni].cluster
	where := "pool " + string(driver.Pool)
	if c := w.clusters[cl]; c != "" {
		where += " of cluster " + string(c)
	}
	ex := w.excludeForPod(pod, cl, pool)
	if ex.allowed == 0 && ex.considered > 0 {
		return nil, fmt.Errorf("no node in its driver's %s meets the executor Pod's own node selector, node affinity and tolerations (%s): %w",
			where, ex.reasons(), ErrNoRoom)
	}
	c := w.newCtx(ask{j: executorJobFor(j, res), execPod: pod.Name}, structs.Shape{Replicas: 1, Resources: res}, []int16{pool}, cl)
	doms := w.executorDomains(c, ni)
	if len(doms) == 0 {
		return nil, fmt.Errorf("job %s requires one %s, and its driver's node %s is in none: %w", j.ID, j.Topology.Required, driver.Node, ErrNoRoom)
	}
	if d := doms[0]; d >= 0 && c.required() {
		where = w.domainName(d) + " of " + where
	}
	return &executorCtx{w: w, c: c, j: j, res: res, where: where, ex: ex, doms: doms}, nil
}

// noRoom says that no node has room for the executor now.
func (e *executorCtx) noRoom() error {
	msg := fmt.Sprintf("no node in its driver's %s has room for an executor of job %s (%s)", e.where, e.j.ID, e.res)
	if e.ex.considered > e.ex.allowed {
		msg += fmt.Sprintf(" that its Pod allows (%s)", e.ex.reasons())
	}
	return fmt.Errorf("%s: %w", msg, ErrNoRoom)
}

// podExclusion counts the nodes of the driver's cluster and pool an
// executor Pod's own constraints leave out, by reason.
type podExclusion struct {
	considered, allowed int
	affinity            int    // not matching its node selector or required node affinity
	affinityErr         string // the first error matching them, if any
	taints              int    // with a taint its tolerations do not tolerate
	firstTaint          string
}

func (e podExclusion) reasons() string {
	var out []string
	if e.affinity > 0 {
		s := fmt.Sprintf("%d not matching its node selector or required node affinity", e.affinity)
		if e.affinityErr != "" {
			s += ": " + e.affinityErr
		}
		out = append(out, s)
	}
	if e.taints > 0 {
		out = append(out, fmt.Sprintf("%d with a taint it does not tolerate, such as %s", e.taints, e.firstTaint))
	}
	return fmt.Sprintf("%d nodes: ", e.considered) + strings.Join(out, ", ")
}

// excludeForPod takes the nodes pod's node selector, required node
// affinity or tolerations rule out out of this (per call) world, so no
// placement uses them, and counts those of cluster cl and pool pool.
func (w *world) excludeForPod(pod ExecutorPod, cl, pool int16) podExclusion {
	var ex podExclusion
	var aff nodeaffinity.RequiredNodeAffinity
	hasAff := len(pod.NodeSelector) > 0 || pod.Affinity != nil
	if hasAff {
		aff = nodeaffinity.NewRequiredNodeAffinity(pod.NodeSelector,
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pod.Affinity}})
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		mine := n.cluster == cl && n.pool == pool && n.ready
		if !n.ready {
			continue
		}
		if mine {
			ex.considered++
		}
		if hasAff {
			ok, err := aff.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(n.n.Name), Labels: n.n.Tags}})
			if err != nil || !ok {
				n.ready = false // this world is PlaceExecutor's own
				if mine {
					ex.affinity++
					if err != nil && ex.affinityErr == "" {
						ex.affinityErr = err.Error()
					}
				}
				continue
			}
		}
		if t := untolerated(n.n, pod.Tolerations); t != nil {
			n.ready = false
			if mine {
				ex.taints++
				if ex.firstTaint == "" {
					ex.firstTaint = fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
				}
			}
			continue
		}
		if mine {
			ex.allowed++
		}
	}
	return ex
}

// intoHeld places executor c into room r held for its job's minimum
// executors, if its Pod and its job allow r's node now and it asks no
// more than r holds. Others' reservations do not matter there: they were
// made around that room (or bind nobody above them); what the executor
// takes of it leaves nobody short.
func (w *world) intoHeld(c *jobCtx, r *Reservation) (assignment, bool) {
	ni, ok := w.byName[r.Node]
	if !ok || w.fails(c, ni, askRoom) != rOK {
		return assignment{}, false
	}
	a, n := w.alloc(ni, c.shape.Resources), &w.nodes[ni]
	h := r.Resources
	if a.MilliCPU > h.MilliCPU || a.Memory > h.Memory || a.Accels > h.Accels ||
		n.freeCPU < a.MilliCPU || n.freeMem < a.Memory || popcount(n.accels) < a.Accels {
		return assignment{}, false
	}
	for _, g := range c.levels[0] {
		if w.nodes[ni].group == g {
			return w.take(ni, a), true
		}
	}
	return assignment{}, false
}
