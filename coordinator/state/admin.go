package state

import (
	"fmt"

	"github.com/atom-sched/atom/pkg/structs"
)

// NodeUpsert adds a node or replaces its spec (capacity, tags, taints,
// pool, state). Tasks on it keep running.
type NodeUpsert struct {
	Node *structs.Node `json:"node"`
}

func (*NodeUpsert) Type() MsgType { return MsgNodeUpsert }

func (c *NodeUpsert) apply(s *State) (any, error) {
	n := c.Node
	if n == nil || n.Name == "" {
		return nil, fmt.Errorf("node: name is required: %w", ErrInvalid)
	}
	if p := n.PoolName(); p != structs.PublicPool && s.Pools[p] == nil {
		return nil, fmt.Errorf("node %s: pool %q does not exist: create it first: %w", n.Name, p, ErrInvalid)
	}
	if n.Cluster != "" && s.Clusters[n.Cluster] == nil {
		return nil, fmt.Errorf("node %s: cluster %q does not exist: %w", n.Name, n.Cluster, ErrInvalid)
	}
	if n.State == "" {
		n.State = structs.NodeReady
	}
	s.Nodes[n.Name] = n
	s.admitter = nil
	return nil, nil
}

// NodeRemove forgets a node that runs nothing.
type NodeRemove struct {
	Name structs.NodeID `json:"name"`
}

func (*NodeRemove) Type() MsgType { return MsgNodeRemove }

func (c *NodeRemove) apply(s *State) (any, error) {
	if s.Nodes[c.Name] == nil {
		return nil, fmt.Errorf("node %s: %w", c.Name, ErrNotFound)
	}
	for _, t := range s.Tasks {
		if t.Node == c.Name && t.State.HoldsResources() {
			return nil, fmt.Errorf("node %s still runs task %s: drain it first: %w", c.Name, t.ID, ErrInvalid)
		}
	}
	delete(s.Nodes, c.Name)
	s.admitter = nil
	return nil, nil
}

// PoolUpsert adds or replaces a project pool.
type PoolUpsert struct {
	Pool *structs.Pool `json:"pool"`
}

func (*PoolUpsert) Type() MsgType { return MsgPoolUpsert }

func (c *PoolUpsert) apply(s *State) (any, error) {
	p := c.Pool
	if p == nil || p.Name == "" || p.Name == structs.PublicPool || p.Project == "" {
		return nil, fmt.Errorf("pool: a project pool needs a name other than %q and a project: %w", structs.PublicPool, ErrInvalid)
	}
	for _, o := range s.Pools {
		if o.Project == p.Project && o.Name != p.Name {
			return nil, fmt.Errorf("pool %s: project %s already has pool %s: %w", p.Name, p.Project, o.Name, ErrExists)
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
	for _, n := range s.Nodes {
		if n.Pool == c.Name {
			return nil, fmt.Errorf("pool %s still has node %s: move its nodes first: %w", c.Name, n.Name, ErrInvalid)
		}
	}
	delete(s.Pools, c.Name)
	s.admitter = nil
	return nil, nil
}

// QuotaSet replaces a scope's limits. Limits below current usage are
// allowed (running work is not evicted; new submissions are refused).
type QuotaSet struct {
	Quota *structs.Quota `json:"quota"`
}

func (*QuotaSet) Type() MsgType { return MsgQuotaSet }

func (c *QuotaSet) apply(s *State) (any, error) {
	q := c.Quota
	if q == nil || q.Scope == "" {
		return nil, fmt.Errorf("quota: scope is required: %w", ErrInvalid)
	}
	for k, v := range q.Limits {
		if err := structs.ValidResourceKey(k); err != nil {
			return nil, fmt.Errorf("quota %s: %w: %w", q.Scope, err, ErrInvalid)
		}
		if v < 0 {
			return nil, fmt.Errorf("quota %s: limits[%s] %d is not allowed: use 0 or more: %w", q.Scope, k, v, ErrInvalid)
		}
	}
	s.Quotas[q.Scope] = q.Limits.Clone()
	return nil, nil
}

// ClusterUpsert adds or replaces a cluster.
type ClusterUpsert struct {
	Cluster *structs.Cluster `json:"cluster"`
}

func (*ClusterUpsert) Type() MsgType { return MsgClusterUpsert }

func (c *ClusterUpsert) apply(s *State) (any, error) {
	if c.Cluster == nil || c.Cluster.Name == "" {
		return nil, fmt.Errorf("cluster: name is required: %w", ErrInvalid)
	}
	s.Clusters[c.Cluster.Name] = c.Cluster
	return nil, nil
}
