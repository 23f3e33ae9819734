package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// NodeUpsert adds a node or replaces its spec (capacity, tags, taints,
// pool, state). Tasks on it keep running. Its quarantined accelerators
// stay quarantined (NodeRelease returns them), whatever Node says.
type NodeUpsert struct {
	Node *structs.Node `json:"node"`
}

func (*NodeUpsert) Type() MsgType { return MsgNodeUpsert }

func (c *NodeUpsert) apply(s *State) (any, error) {
	n := c.Node
	if n == nil || n.Name == "" {
		return nil, invalidf("node: name is required")
	}
	if p := n.PoolName(); p != structs.PublicPool && s.Pools[p] == nil {
		return nil, invalidf("node %s: pool %q does not exist: create it first", n.Name, p)
	}
	if n.Cluster != "" && s.Clusters[n.Cluster] == nil {
		return nil, invalidf("node %s: cluster %q does not exist", n.Name, n.Cluster)
	}
	// A node's name is its ID across clusters: two kubernetes clusters
	// each with a Node gpu-1 would otherwise overwrite each other's. A
	// spec naming no cluster keeps the node's.
	old := s.Nodes[n.Name]
	if old != nil && old.Cluster != "" && n.Cluster != "" && old.Cluster != n.Cluster {
		return nil, invalidf("node %s: a node of that name is in cluster %s, not %s: node names must be unique across clusters (remove it from %s first to move it; a kubernetes Node's name is its node's)",
			n.Name, old.Cluster, n.Cluster, old.Cluster)
	}
	if err := s.sameSpelling(n); err != nil {
		return nil, err
	}
	nn := *n
	if old != nil && nn.Cluster == "" {
		nn.Cluster = old.Cluster
	}
	if nn.State == "" {
		nn.State = structs.NodeReady
	}
	nn.Quarantined = s.keptQuarantine(n)
	s.Nodes[n.Name] = &nn
	s.admitter = nil
	s.trimHeld(n.Name) // not ready, or smaller: room held for executors it cannot hold goes
	return nil, nil
}

// NodeRemove forgets a node that runs nothing; with Cluster, only the
// node of that name in that cluster (another cluster's is not found).
type NodeRemove struct {
	Name    structs.NodeID    `json:"name"`
	Cluster structs.ClusterID `json:"cluster,omitempty"`
}

func (*NodeRemove) Type() MsgType { return MsgNodeRemove }

func (c *NodeRemove) apply(s *State) (any, error) {
	if n := s.Nodes[c.Name]; n == nil || (c.Cluster != "" && n.Cluster != c.Cluster) {
		return nil, fmt.Errorf("node %s: %w", c.Name, ErrNotFound)
	}
	for _, t := range s.Tasks {
		if t.Node == c.Name && t.State.HoldsResources() {
			return nil, invalidf("node %s still runs task %s: set the node draining (node set with state: draining) so nothing new lands, and delete it once its tasks have ended", c.Name, t.ID)
		}
	}
	delete(s.Nodes, c.Name)
	s.admitter = nil
	s.trimHeld(c.Name)
	return nil, nil
}

// PoolUpsert adds or replaces a project pool, or sets the public pool's
// one setting, its minimum runtime (the state keeps the public pool only
// while that is set).
type PoolUpsert struct {
	Pool *structs.Pool `json:"pool"`
}

func (*PoolUpsert) Type() MsgType { return MsgPoolUpsert }

func (c *PoolUpsert) apply(s *State) (any, error) {
	p := c.Pool
	if p != nil && p.Name == structs.PublicPool {
		if p.Project != "" || len(p.Members) > 0 || p.LendIdle || p.MaxPreemptNotice != 0 || p.MinRuntime < 0 {
			return nil, invalidf("pool %s: the public pool sets only minRuntime", p.Name)
		}
		if p.MinRuntime == 0 {
			delete(s.Pools, p.Name)
		} else {
			s.Pools[p.Name] = p
		}
		return nil, nil
	}
	if p == nil || p.Name == "" || p.Name == structs.PublicPool || p.Project == "" {
		return nil, invalidf("pool: a project pool needs a name other than %q and a project", structs.PublicPool)
	}
	for _, o := range s.Pools {
		if o.Project == p.Project && o.Name != p.Name {
			return nil, existsf("pool %s: project %s already has pool %s, and a project has one pool: set %s instead, or delete it first", p.Name, p.Project, o.Name, o.Name)
		}
	}
	s.Pools[p.Name] = p
	s.admitter = nil
	return nil, nil
}

// PoolRemove deletes a project pool no node belongs to.
type PoolRemove struct {
	Name structs.PoolID `json:"name"`
}

func (*PoolRemove) Type() MsgType { return MsgPoolRemove }

func (c *PoolRemove) apply(s *State) (any, error) {
	if s.Pools[c.Name] == nil {
		return nil, fmt.Errorf("pool %s: %w", c.Name, ErrNotFound)
	}
	if c.Name == structs.PublicPool {
		return nil, invalidf("the public pool is never deleted: set it without minRuntime to drop its settings")
	}
	var left []string
	for _, n := range s.Nodes {
		if n.Pool == c.Name {
			left = append(left, string(n.Name))
		}
	}
	switch slices.Sort(left); len(left) {
	case 0:
	case 1:
		return nil, invalidf("pool %s still has node %s: move it to another pool first", c.Name, left[0])
	default:
		return nil, invalidf("pool %s still has %d nodes, %s: move them to other pools first", c.Name, len(left), strings.Join(left, ", "))
	}
	delete(s.Pools, c.Name)
	s.admitter = nil
	return nil, nil
}

// QuotaSet replaces a scope's limits and its fair-share weight (0: the
// default, 1). Limits below current usage are allowed (running work is
// not evicted; new submissions are refused). A gpu/<type> or
// device/<type> key differing only in case from a type some node has is
// refused (it would count for nothing); a type no node has is accepted,
// since nodes join later (a Kubernetes cluster's after its config).
type QuotaSet struct {
	Quota *structs.Quota `json:"quota"`
}

func (*QuotaSet) Type() MsgType { return MsgQuotaSet }

func (c *QuotaSet) apply(s *State) (any, error) {
	q := c.Quota
	if q == nil || q.Scope == "" {
		return nil, invalidf("quota: scope is required")
	}
	for k, v := range q.Limits {
		if err := structs.ValidResourceKey(k); err != nil {
			return nil, invalidf("quota %s: %w", q.Scope, err)
		}
		if v < 0 {
			return nil, invalidf("quota %s: limits[%s] %d is not allowed: use 0 or more", q.Scope, k, v)
		}
		if err := s.knownKey(k); err != nil {
			return nil, invalidf("quota %s: limits[%s]: %w", q.Scope, k, err)
		}
	}
	if w := q.Weight; w < 0 || w > structs.MaxWeight || w != w {
		return nil, invalidf("quota %s: weight %g is not allowed: use a number above 0 and at most %g (default 1)", q.Scope, w, structs.MaxWeight)
	}
	s.Quotas[q.Scope] = q.Limits.Clone()
	if q.Weight == 0 || q.Weight == 1 {
		delete(s.Weights, q.Scope)
	} else {
		if s.Weights == nil {
			s.Weights = map[structs.Scope]float64{}
		}
		s.Weights[q.Scope] = q.Weight
	}
	return nil, nil
}

// knownKey refuses a gpu/<type> or device/<type> key that some node's
// type matches only when case is ignored (gpu/a100 where nodes have
// A100): such a limit would count for nothing, as a job asking for that
// type is refused. It names the types nodes have and the one meant. A
// type no node has is accepted: nodes join clusters after their quotas.
func (s *State) knownKey(k structs.ResourceKey) error {
	kind, t, ok := strings.Cut(string(k), "/")
	if !ok || (kind != "gpu" && kind != "device") {
		return nil
	}
	have := map[string]structs.NodeID{}
	for _, n := range s.Nodes {
		for _, nt := range nodeTypes(n, kind) {
			have[nt] = n.Name
		}
	}
	if _, ok := have[t]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(have))
	if twin := structs.CaseTwin(names, t); twin != "" {
		return fmt.Errorf("unknown %s type %q: this cluster has %s; did you mean %s/%s? (types are case-sensitive)", typeWord[kind], t, strings.Join(names, ", "), kind, twin)
	}
	return nil
}

// typeWord names a kind of type in messages.
var typeWord = map[string]string{"gpu": "accelerator", "device": "device"}

// nodeTypes lists node n's accelerator types (kind "gpu") or device types
// (kind "device").
func nodeTypes(n *structs.Node, kind string) []string {
	if kind == "device" {
		if len(n.Capacity.Devices) == 0 {
			return nil
		}
		return slices.Sorted(maps.Keys(n.Capacity.Devices))
	}
	if n.Capacity.Accels > 0 && n.Capacity.AccelType != "" {
		return []string{n.Capacity.AccelType}
	}
	return nil
}

// sameSpelling refuses node n's accelerator or device type when another
// node has it spelled in another case (a100 where node gpu-1 has A100):
// the two would be different types, and every job, quota and fair-share
// weight naming one would miss the other's nodes. The node named is the
// first by name, so every server says the same.
func (s *State) sameSpelling(n *structs.Node) error {
	for _, kind := range []string{"gpu", "device"} {
		for _, t := range nodeTypes(n, kind) {
			var by structs.NodeID
			var twin string
			for name, o := range s.Nodes {
				if name == n.Name || (by != "" && name > by) {
					continue
				}
				if tw := structs.CaseTwin(nodeTypes(o, kind), t); tw != "" {
					by, twin = name, tw
				}
			}
			if twin != "" {
				return invalidf("node %s: %s type %q differs only in case from node %s's %s: types are case-sensitive, so jobs and quotas naming one would never get the other: write %s",
					n.Name, typeWord[kind], t, by, twin, twin)
			}
		}
	}
	return nil
}

// ClusterUpsert adds or replaces a cluster.
type ClusterUpsert struct {
	Cluster *structs.Cluster `json:"cluster"`
}

func (*ClusterUpsert) Type() MsgType { return MsgClusterUpsert }

func (c *ClusterUpsert) apply(s *State) (any, error) {
	if c.Cluster == nil || c.Cluster.Name == "" {
		return nil, invalidf("cluster: name is required")
	}
	s.Clusters[c.Cluster.Name] = c.Cluster
	s.admitter = nil // its topology levels decide what jobs may ask
	return nil, nil
}
