package api

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// scopeParam checks the {scope} path value: user:<name> or project:<name>.
func scopeParam(r *http.Request) (structs.Scope, error) {
	raw := r.PathValue("scope")
	kind, name, _ := strings.Cut(raw, ":")
	var err error
	switch kind {
	case "user":
		err = structs.ValidateTypeName("user", name)
	case "project":
		err = structs.ValidateObjectName("project", name)
	default:
		return "", errorf(http.StatusBadRequest, "scope %q is not allowed: use user:<name> or project:<name>", trunc(raw))
	}
	if err != nil {
		return "", errorf(http.StatusBadRequest, "scope %q is not allowed: %v", trunc(raw), err)
	}
	return structs.Scope(raw), nil
}

func quotaStatus(st *state.State, scope structs.Scope, fs sched.Standing) wire.QuotaStatus {
	return wire.QuotaStatus{Scope: scope, Limits: st.Quotas[scope].Clone(), Usage: st.Usage[scope].Clone(), FairShare: fs}
}

// listQuotas: GET /v1/quotas: every scope with a quota, quota usage or
// fair-share usage that the caller may read.
func (s *server) listQuotas(_ http.ResponseWriter, _ *http.Request, c caller) (int, any, error) {
	out := wire.QuotaList{Quotas: []wire.QuotaStatus{}}
	s.store.Read(func(st *state.State) {
		mine := projects(st, c.user)
		scopes := map[structs.Scope]bool{}
		for k := range st.Quotas {
			scopes[k] = true
		}
		for k := range st.Usage {
			scopes[k] = true
		}
		for k := range st.FairUsage.Scopes {
			scopes[k] = true
		}
		var seen []structs.Scope
		for _, sc := range slices.Sorted(maps.Keys(scopes)) {
			if c.canSeeScope(sc, mine) {
				seen = append(seen, sc)
			}
		}
		fs := st.Standings(s.clock(), seen...)
		for _, sc := range seen {
			out.Quotas = append(out.Quotas, quotaStatus(st, sc, fs[sc]))
		}
	})
	return http.StatusOK, out, nil
}

// getQuota: GET /v1/quotas/{scope}. A scope without a quota has every
// limit 0 and answers with empty limits.
func (s *server) getQuota(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	scope, err := scopeParam(r)
	if err != nil {
		return 0, nil, err
	}
	var out wire.QuotaStatus
	allowed := false
	s.store.Read(func(st *state.State) {
		if allowed = c.canSeeScope(scope, projects(st, c.user)); allowed {
			out = quotaStatus(st, scope, st.Standings(s.clock(), scope)[scope])
		}
	})
	if !allowed {
		return 0, nil, errorf(http.StatusForbidden, "user %s may read the quota of user:%s and of the projects whose pools list them, not %s", c.user, c.user, scope)
	}
	return http.StatusOK, out, nil
}

// putQuota: PUT /v1/quotas/{scope} with a quota spec (admins).
func (s *server) putQuota(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	scope, err := scopeParam(r)
	if err != nil {
		return 0, nil, err
	}
	q, err := readSpec(r, "quota spec", structs.ParseQuotaSpec)
	if err != nil {
		return 0, nil, err
	}
	if err := nameMatches("scope", string(q.Scope), string(scope)); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.QuotaSet{Quota: q}); err != nil {
		return 0, nil, err
	}
	var out wire.QuotaStatus
	s.store.Read(func(st *state.State) { out = quotaStatus(st, scope, st.Standings(s.clock(), scope)[scope]) })
	return http.StatusOK, out, nil
}

// listPools: GET /v1/pools: the project pools, by name.
func (s *server) listPools(_ http.ResponseWriter, _ *http.Request, _ caller) (int, any, error) {
	out := wire.PoolList{Pools: []*structs.Pool{}}
	s.store.Read(func(st *state.State) {
		for _, k := range slices.Sorted(maps.Keys(st.Pools)) {
			out.Pools = append(out.Pools, st.Pools[k])
		}
	})
	return http.StatusOK, out, nil
}

// getPool: GET /v1/pools/{name}.
func (s *server) getPool(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("pool", name); err != nil {
		return 0, nil, err
	}
	var p *structs.Pool
	s.store.Read(func(st *state.State) { p = st.Pools[structs.PoolID(name)] })
	if p == nil && name == string(structs.PublicPool) {
		p = &structs.Pool{Name: structs.PublicPool} // no settings made
	}
	if p == nil {
		return 0, nil, errorf(http.StatusNotFound, "pool %s not found", name)
	}
	return http.StatusOK, p, nil
}

// putPool: PUT /v1/pools/{name} with a pool spec (admins).
func (s *server) putPool(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("pool", name); err != nil {
		return 0, nil, err
	}
	p, err := readSpec(r, "pool spec", structs.ParsePoolSpec)
	if err != nil {
		return 0, nil, err
	}
	if err := nameMatches("pool name", string(p.Name), name); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.PoolUpsert{Pool: p}); err != nil {
		return 0, nil, err
	}
	return s.getPool(nil, r, caller{})
}

// deletePool: DELETE /v1/pools/{name} (admins); refused while nodes
// belong to it.
func (s *server) deletePool(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("pool", name); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.PoolRemove{Name: structs.PoolID(name)}); err != nil {
		return 0, nil, conflictIfInvalid(err)
	}
	return http.StatusNoContent, nil, nil
}

// nodeStatuses returns the nodes named (all when names is nil) with what
// their tasks hold.
func nodeStatuses(st *state.State, only structs.NodeID) []wire.NodeStatus {
	idx := map[structs.NodeID]int{}
	var out []wire.NodeStatus
	for _, k := range slices.Sorted(maps.Keys(st.Nodes)) {
		if only != "" && k != only {
			continue
		}
		idx[k] = len(out)
		n := st.Nodes[k]
		out = append(out, wire.NodeStatus{Node: *n, Domains: nodeDomains(st, n)})
	}
	for _, t := range st.Tasks {
		i, ok := idx[t.Node]
		if !ok || !t.State.HoldsResources() {
			continue
		}
		a := &out[i].Allocated
		a.MilliCPU += t.Resources.MilliCPU
		a.Memory += t.Resources.Memory
		a.Accels += t.Resources.Accels
		if t.Resources.Accels > 0 {
			a.AccelType = out[i].Capacity.AccelType
		}
		for d, n := range t.Resources.Devices {
			if a.Devices == nil {
				a.Devices = map[string]int64{}
			}
			a.Devices[d] += n
		}
		out[i].Tasks++
	}
	return out
}

// nodeDomains lists node n's topology domains in its cluster, widest first.
func nodeDomains(st *state.State, n *structs.Node) []wire.NodeDomain {
	c := st.Clusters[n.Cluster]
	if c == nil || c.Topology == nil {
		return nil
	}
	var out []wire.NodeDomain
	for _, l := range c.Topology.Levels {
		if v := n.Tags[l]; v != "" {
			out = append(out, wire.NodeDomain{Level: l, Domain: v})
		}
	}
	return out
}

// listNodes: GET /v1/nodes.
func (s *server) listNodes(_ http.ResponseWriter, _ *http.Request, _ caller) (int, any, error) {
	out := wire.NodeList{}
	s.store.Read(func(st *state.State) { out.Nodes = nodeStatuses(st, "") })
	if out.Nodes == nil {
		out.Nodes = []wire.NodeStatus{}
	}
	return http.StatusOK, out, nil
}

// getNode: GET /v1/nodes/{name}.
func (s *server) getNode(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := nodeName(name); err != nil {
		return 0, nil, err
	}
	var ns []wire.NodeStatus
	s.store.Read(func(st *state.State) { ns = nodeStatuses(st, structs.NodeID(name)) })
	if len(ns) == 0 {
		return 0, nil, errorf(http.StatusNotFound, "node %s not found", name)
	}
	return http.StatusOK, ns[0], nil
}

// putNode: PUT /v1/nodes/{name} with a node spec (admins). Tasks on the
// node keep running.
func (s *server) putNode(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := nodeName(name); err != nil {
		return 0, nil, err
	}
	n, err := readSpec(r, "node spec", structs.ParseNodeSpec)
	if err != nil {
		return 0, nil, err
	}
	if err := nameMatches("node name", string(n.Name), name); err != nil {
		return 0, nil, err
	}
	if err := s.defaultCluster(n); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.NodeUpsert{Node: n}); err != nil {
		return 0, nil, err
	}
	return s.getNode(nil, r, caller{})
}

// defaultCluster puts a node whose spec names no cluster into the only
// cluster, as a cluster config does: a node in no cluster is one no gang
// spans with the others. With several clusters the spec must name one. A
// node already in a cluster stays there (the state keeps it).
func (s *server) defaultCluster(n *structs.Node) error {
	if n.Cluster != "" {
		return nil
	}
	var names []string
	var kept bool
	s.store.Read(func(st *state.State) {
		if old := st.Nodes[n.Name]; old != nil && old.Cluster != "" {
			kept = true
		}
		for id := range st.Clusters {
			names = append(names, string(id))
		}
	})
	slices.Sort(names)
	switch {
	case kept || len(names) == 0:
		return nil
	case len(names) == 1:
		n.Cluster = structs.ClusterID(names[0])
		return nil
	}
	return errorf(http.StatusBadRequest, "node spec: cluster is required: there are %d clusters, name one of %s", len(names), strings.Join(names, ", "))
}

// deleteNode: DELETE /v1/nodes/{name} (admins); refused while tasks hold it.
func (s *server) deleteNode(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := nodeName(name); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.NodeRemove{Name: structs.NodeID(name)}); err != nil {
		return 0, nil, conflictIfInvalid(err)
	}
	return http.StatusNoContent, nil, nil
}

// releaseNode: POST /v1/nodes/{name}/release {"accelerators": [2, 3]}
// (admins): returns quarantined accelerators to service once the hardware
// is fixed; {} returns all of them.
func (s *server) releaseNode(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := nodeName(name); err != nil {
		return 0, nil, err
	}
	var req wire.ReleaseRequest
	if err := decodeJSON(r, &req, `a release request ({} for every quarantined accelerator, or {"accelerators": [2, 3]})`); err != nil {
		return 0, nil, err
	}
	if len(req.Accelerators) > structs.MaxAccelsPerNode {
		return 0, nil, &structs.FieldError{Field: "accelerators", Msg: fmt.Sprintf("lists %d indices: list at most %d", len(req.Accelerators), structs.MaxAccelsPerNode)}
	}
	for i, a := range req.Accelerators {
		if slices.Contains(req.Accelerators[:i], a) {
			return 0, nil, &structs.FieldError{Field: "accelerators", Msg: fmt.Sprintf("lists %d twice: list each index once", a)}
		}
	}
	res, err := s.apply(r.Context(), &state.NodeRelease{Name: structs.NodeID(name), Accels: req.Accelerators})
	if err != nil {
		return 0, nil, err
	}
	rr, _ := res.(state.ReleaseResult)
	out := wire.ReleaseResponse{Released: rr.Released, Quarantined: rr.Quarantined}
	s.store.Read(func(st *state.State) {
		if ns := nodeStatuses(st, structs.NodeID(name)); len(ns) == 1 {
			out.Node = ns[0]
		}
	})
	return http.StatusOK, out, nil
}

// listClusters: GET /v1/clusters.
func (s *server) listClusters(_ http.ResponseWriter, _ *http.Request, _ caller) (int, any, error) {
	out := wire.ClusterList{Clusters: []*structs.Cluster{}}
	s.store.Read(func(st *state.State) {
		for _, k := range slices.Sorted(maps.Keys(st.Clusters)) {
			out.Clusters = append(out.Clusters, st.Clusters[k])
		}
	})
	return http.StatusOK, out, nil
}

// getCluster: GET /v1/clusters/{name}.
func (s *server) getCluster(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("cluster", name); err != nil {
		return 0, nil, err
	}
	var cl *structs.Cluster
	s.store.Read(func(st *state.State) { cl = st.Clusters[structs.ClusterID(name)] })
	if cl == nil {
		return 0, nil, errorf(http.StatusNotFound, "cluster %s not found", name)
	}
	return http.StatusOK, cl, nil
}

// backendKept refuses to change the backend of a cluster that has nodes:
// its tasks run there, and its nodes came from that backend (a cluster
// config's nodes, or a kubernetes cluster's Node objects).
func (s *server) backendKept(cl *structs.Cluster) error {
	var old *structs.Cluster
	nodes := 0
	s.store.Read(func(st *state.State) {
		old = st.Clusters[cl.Name]
		for _, n := range st.Nodes {
			if n.Cluster == cl.Name {
				nodes++
			}
		}
	})
	if old == nil || old.Backend == cl.Backend || nodes == 0 {
		return nil
	}
	return errorf(http.StatusConflict, "cluster %s has %d nodes on backend %s: a cluster with nodes cannot change backend to %s (its tasks run there): add a new cluster with backend %s instead",
		cl.Name, nodes, old.Backend, cl.Backend, cl.Backend)
}

// putCluster: PUT /v1/clusters/{name} with a cluster spec (admins).
func (s *server) putCluster(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("cluster", name); err != nil {
		return 0, nil, err
	}
	cl, err := readSpec(r, "cluster spec", parseClusterSpec)
	if err != nil {
		return 0, nil, err
	}
	if err := nameMatches("cluster name", string(cl.Name), name); err != nil {
		return 0, nil, err
	}
	if err := s.backendKept(cl); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.ClusterUpsert{Cluster: cl}); err != nil {
		return 0, nil, err
	}
	return s.getCluster(nil, r, caller{})
}

// deleteCluster: DELETE /v1/clusters/{name} (admins); refused, naming
// them, while nodes are in it or jobs that have not ended are pinned to it.
func (s *server) deleteCluster(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	name := r.PathValue("name")
	if err := objectName("cluster", name); err != nil {
		return 0, nil, err
	}
	if _, err := s.apply(r.Context(), &state.ClusterRemove{Name: structs.ClusterID(name)}); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return 0, nil, errorf(http.StatusNotFound, "cluster %s not found", name)
		}
		return 0, nil, conflictIfInvalid(err)
	}
	return http.StatusNoContent, nil, nil
}
