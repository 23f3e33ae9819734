package sched

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Admission is what accepting a job at submit does to quota.
type Admission struct {
	Scope  structs.Scope        // charged scope; "" when nothing is charged
	Charge structs.ResourceList // nil for high and low jobs
	// PoolOnly: accepted without public quota; may run only in its
	// project's pool.
	PoolOnly bool
}

// Errors Admit returns; callers branch with errors.Is / errors.As.
var (
	ErrQuotaExceeded = errors.New("quota exceeded")
	ErrUnsatisfiable = errors.New("can never fit")
	ErrNotAllowed    = errors.New("not allowed")
)

// QuotaError refuses a submission that would exceed its scope's quota.
type QuotaError struct{ QuotaShortfall }

func (e *QuotaError) Error() string { return e.QuotaShortfall.String() }

// Unwrap lets errors.Is match ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// UnsatisfiableError refuses a job no node could ever hold.
type UnsatisfiableError struct{ Why *Why }

func (e *UnsatisfiableError) Error() string { return e.Why.Message }

// Unwrap lets errors.Is match ErrUnsatisfiable.
func (e *UnsatisfiableError) Unwrap() error { return ErrUnsatisfiable }

// Admit decides whether job j (already validated) is accepted onto the
// cluster in snap and what it charges. A normal job charges its scope at
// submit: pending jobs hold quota, as running ones do. A normal job over quota is
// refused, unless its project has a pool: then it is accepted uncharged and
// may run only in that pool. High jobs need a project pool; high and low
// jobs charge nothing. Jobs that no node could ever hold, on any shape,
// are refused, as are unknown accelerator types, devices, clusters and
// nodes; only hardware counts for that, since tags, taints and readiness
// change and nodes join: replicas asked on distinct nodes wait for them.
// Admit does not change snap.
func Admit(snap *Snapshot, j *structs.Job) (Admission, error) {
	return NewAdmitter(snap).Admit(j, snap.Quotas, snap.Usage)
}

// Admitter answers Admit for a fixed set of nodes and pools (a snapshot's
// Nodes and Pools; its tasks and jobs are ignored: admission looks only at
// hardware and quota). Build one when nodes or pools change and reuse it:
// each Admit then costs no more than the job's own question. It is not
// safe for concurrent use.
type Admitter struct {
	w     *world
	never map[string]*Why // hardware answers per question (whyKey); nil: fits
}

// NewAdmitter indexes snap's nodes and pools.
func NewAdmitter(snap *Snapshot) *Admitter {
	return &Admitter{w: newWorld(&Snapshot{Nodes: snap.Nodes, Pools: snap.Pools, Topology: snap.Topology, Clusters: snap.Clusters, Jobs: map[structs.JobID]*structs.Job{}}),
		never: map[string]*Why{}}
}

// Admit is Admit against the admitter's nodes and pools with the given
// quota limits and usage (read only).
func (a *Admitter) Admit(j *structs.Job, quotas, usage map[structs.Scope]structs.ResourceList) (Admission, error) {
	w := a.w
	w.snap.Quotas = quotas
	w.usage = usage
	defer func() { w.snap.Quotas, w.usage = nil, nil }()
	// A cluster without nodes yet has no hardware to judge the job by:
	// nodes join clusters, so it waits for them.
	awaitNodes := w.awaitsNodes(j)
	check := w.checkKnown
	if awaitNodes {
		check = w.checkLevel // its cluster's config names its levels
	}
	if err := check(j); err != nil {
		return Admission{}, err
	}
	// A project is known through its pool, which lists its members (a
	// project with public quota but no reserved machines has a pool
	// without nodes).
	var pool *structs.Pool
	if j.Project != "" {
		pp, ok := w.projPool[j.Project]
		if !ok {
			if m := structs.Nearest(w.projectNames(), string(j.Project)); m != "" {
				return Admission{}, fmt.Errorf("project %s does not exist: did you mean %s? (%w)", j.Project, m, ErrNotAllowed)
			}
			return Admission{}, fmt.Errorf("project %s does not exist: an admin creates it with a pool listing its members (the pool may have no nodes): %w", j.Project, ErrNotAllowed)
		}
		pool = w.pools[pp[0]]
		if !pool.HasMember(j.Owner) {
			return Admission{}, fmt.Errorf("user %s is not a member of project %s (pool %s): %w", j.Owner, j.Project, pool.Name, ErrNotAllowed)
		}
	}
	if j.Priority == structs.PriorityHigh && pool == nil {
		return Admission{}, fmt.Errorf("priority high runs only in a project's pool and the job names no project: use normal or low, or a project: %w", ErrNotAllowed)
	}
	// Quota before the fit check: a normal project job over its public
	// quota may still run in its pool, and then only there, which the fit
	// check must know. A job that can never fit is told so before quota.
	var adm Admission
	var over error // over quota with no pool to fall back on: refused after the fit check
	if j.Priority == structs.PriorityNormal {
		scope := j.ChargeScope()
		s0 := j.ShapeAt(0)
		charge := structs.JobCharge(j, s0, s0.Replicas) // a spark job's executors too
		jj := *j
		jj.Charged = nil
		switch q := w.quotaCheck(&jj, charge); {
		case q == nil:
			adm = Admission{Scope: scope, Charge: charge}
		case pool != nil:
			adm = Admission{PoolOnly: true}
		default:
			if _, ok := quotas[scope]; !ok {
				q.Limit = 0
			}
			over = &QuotaError{*q}
		}
	}
	// Never-fit check over every shape, on empty nodes.
	var first *Why
	fits := awaitNodes
	for i := 0; i < j.NumShapes() && !fits; i++ {
		jj := *j
		s := j.ShapeAt(i)
		jj.Replicas, jj.Resources, jj.Fallbacks, jj.PoolOnly = s.Replicas, s.Resources, nil, adm.PoolOnly
		c := w.newCtx(ask{j: &jj}, s, w.eligiblePools(&jj), -1)
		k, _ := w.whyKey(w.key[:0], c, askSubmitCount) // no live replicas, reservations or other jobs here
		w.key = k
		why, seen := a.never[string(k)]
		if !seen {
			why = w.explainNodes(c, true)
			if !why.NeverFits {
				why = nil
			}
			a.never[string(k)] = why
		}
		if why == nil {
			fits = true
		} else if first == nil {
			first = why
		}
	}
	if !fits {
		why := *first // the cached answer stays unrendered
		why.Filtered = slices.Clone(first.Filtered)
		prefix := "can never fit"
		if adm.PoolOnly {
			prefix = "can never fit: over public quota, so only the project's pool may be used"
		}
		why.render(prefix)
		return Admission{}, &UnsatisfiableError{Why: &why}
	}
	if over != nil {
		return Admission{}, over
	}
	return adm, nil
}

// projectNames lists the projects (those with a pool), sorted.
func (w *world) projectNames() []string {
	var out []string
	for p := range w.projPool {
		out = append(out, string(p))
	}
	slices.Sort(out)
	return out
}

// checkKnown refuses accelerator and device types and pinned nodes and
// clusters that no node has, naming what exists.
func (w *world) checkKnown(j *structs.Job) error {
	accel, dev, clusters := w.knownTypes().accel, w.known.dev, w.known.clusters
	for i := 0; i < j.NumShapes(); i++ {
		r := j.ShapeAt(i).Resources
		if r.Accels > 0 && r.AccelType != "" && !accel[r.AccelType] {
			return unknownf("unknown accelerator type %q: this cluster has %s%s", r.AccelType, known(accel), meant(accel, r.AccelType))
		}
		for d := range r.Devices {
			if !dev[d] {
				return unknownf("unknown device type %q: this cluster has %s%s", d, known(dev), meant(dev, d))
			}
		}
	}
	if j.NodeName != "" {
		if _, ok := w.byName[j.NodeName]; !ok {
			return fmt.Errorf("node %s does not exist: %w", j.NodeName, ErrUnsatisfiable)
		}
	}
	if j.Cluster != "" && !clusters[j.Cluster] {
		names := map[string]bool{}
		for c := range clusters {
			names[string(c)] = true
		}
		for c := range w.snap.Clusters {
			names[string(c)] = true
		}
		hint := ""
		if m := structs.Nearest(slices.Sorted(maps.Keys(names)), string(j.Cluster)); m != "" {
			hint = "; did you mean " + m + "?"
		}
		return unknownf("cluster %q does not exist: known clusters are %s%s", j.Cluster, known(names), hint)
	}
	return w.checkLevel(j)
}

// knownTypes returns w.known, computing it the first time.
func (w *world) knownTypes() *knownTypes {
	if w.known == nil {
		k := &knownTypes{accel: map[string]bool{}, dev: map[string]bool{}, clusters: map[structs.ClusterID]bool{}}
		for i := range w.nodes {
			n := w.nodes[i].n
			k.clusters[n.Cluster] = true
			if n.Capacity.Accels > 0 {
				k.accel[n.Capacity.AccelType] = true
			}
			for d := range n.Capacity.Devices {
				k.dev[d] = true
			}
		}
		w.known = k
	}
	return w.known
}

// awaitsNodes reports whether j names a declared cluster that no node
// is in yet (Snapshot.Clusters).
func (w *world) awaitsNodes(j *structs.Job) bool {
	return j.Cluster != "" && w.snap.Clusters[j.Cluster] && !w.knownTypes().clusters[j.Cluster]
}

// UnknownError refuses a job naming an accelerator type, device type or
// cluster that does not exist. It matches ErrUnsatisfiable.
type UnknownError struct{ msg string }

func (e *UnknownError) Error() string { return e.msg }

// Unwrap lets errors.Is match ErrUnsatisfiable.
func (e *UnknownError) Unwrap() error { return ErrUnsatisfiable }

func unknownf(format string, a ...any) error { return &UnknownError{msg: fmt.Sprintf(format, a...)} }

// knownTypes is what exists on the nodes, computed once per world.
type knownTypes struct {
	accel, dev map[string]bool
	clusters   map[structs.ClusterID]bool
}

// meant suggests the type in m that t differs from only in case.
func meant(m map[string]bool, t string) string {
	if twin := structs.CaseTwin(slices.Sorted(maps.Keys(m)), t); twin != "" {
		return fmt.Sprintf("; did you mean %s? (types are case-sensitive)", twin)
	}
	return ""
}

func known(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
