package sched

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// ErrNoRoom says an executor does not fit now; it may once room frees up.
var ErrNoRoom = errors.New("does not fit now")

// PlaceExecutor picks the node for one more executor of spark job j, whose
// driver is task driver, on snap: the node the core would give a
// one-replica job of j's priority, project, tolerations, selector (plus the
// executor's nodeSelector) and affinity to other jobs asking the
// executor's resources (Spark.ExecutorResources), in the driver's cluster
// and pool (an executor is charged with its driver: in a project pool
// neither is). Reservations of other jobs are respected. It returns the
// placement (Index and ID left for the state to set) or an error matching
// ErrNoRoom. The executor limit and quota are not its business: the job's
// charge covers its most executors, and the state counts them.
func PlaceExecutor(snap *Snapshot, j *structs.Job, driver *structs.Task) (TaskPlacement, error) {
	if j.Spark == nil {
		return TaskPlacement{}, fmt.Errorf("job %s is of kind %s: only spark jobs have executors", j.ID, j.Kind)
	}
	w := newWorld(snap)
	ni, ok := w.byName[driver.Node]
	if !ok {
		return TaskPlacement{}, fmt.Errorf("the driver of job %s is on node %s, which no longer exists", j.ID, driver.Node)
	}
	pool, ok := w.poolIdx[driver.Pool]
	if !ok {
		return TaskPlacement{}, fmt.Errorf("the driver of job %s is in pool %s, which no longer exists", j.ID, driver.Pool)
	}
	cl := w.nodes[ni].cluster
	res := j.Spark.ExecutorResources()
	jj := *j
	jj.Kind, jj.Replicas, jj.MinAvailable, jj.Resources, jj.Fallbacks, jj.NodeName = structs.KindCommand, 1, 0, res, nil, ""
	jj.Affinity.SpreadReplicas = false
	var sel []string
	if j.Selector != "" {
		sel = append(sel, j.Selector)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Spark.Executor.NodeSelector)) {
		sel = append(sel, k+"="+j.Spark.Executor.NodeSelector[k])
	}
	jj.Selector = strings.Join(sel, ",")
	c := w.newCtx(&jj, structs.Shape{Replicas: 1, Resources: res}, []int16{pool}, cl)
	as := w.placeReplicas(c, 0, 1, true)
	if len(as) != 1 {
		where := "pool " + string(driver.Pool)
		if c := w.clusters[cl]; c != "" {
			where += " of cluster " + string(c)
		}
		return TaskPlacement{}, fmt.Errorf("no node in its driver's %s has room for an executor of job %s (%s): %w", where, j.ID, res, ErrNoRoom)
	}
	a := as[0]
	return TaskPlacement{Index: -1, Node: w.nodes[a.ni].n.Name, Pool: driver.Pool, Resources: a.res, Accels: a.accels}, nil
}
