package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// MsgClusterRemove is ClusterRemove's log type. It does not carry
// MsgIgnorable: a server that kept the cluster would accept nodes and
// jobs naming it that the others refuse. Upgrade every server before
// deleting a cluster.
const MsgClusterRemove MsgType = 25

func init() { register(MsgClusterRemove, func() Command { return &ClusterRemove{} }) }

// ClusterRemove deletes a cluster nothing uses: no node is in it (so no
// task runs there and no pool has a node there) and no job that has not
// ended is pinned to it. The refusal names what still uses it.
type ClusterRemove struct {
	Name structs.ClusterID `json:"name"`
}

func (*ClusterRemove) Type() MsgType { return MsgClusterRemove }

func (c *ClusterRemove) apply(s *State) (any, error) {
	if s.Clusters[c.Name] == nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, ErrNotFound)
	}
	var nodes, jobs []string
	for _, id := range slices.Sorted(maps.Keys(s.Nodes)) {
		if s.Nodes[id].Cluster == c.Name {
			nodes = append(nodes, string(id))
		}
	}
	if len(nodes) > 0 {
		return nil, invalidf("cluster %s still has %s %s: delete them first (coordinator node delete NAME; a node running tasks: node set with state: draining, and delete it once they end)",
			c.Name, plural(len(nodes), "node"), listSome(nodes))
	}
	for _, id := range slices.Sorted(maps.Keys(s.Jobs)) {
		if j := s.Jobs[id]; j.Cluster == c.Name && !j.State.Ended() {
			jobs = append(jobs, string(id))
		}
	}
	if len(jobs) > 0 {
		return nil, invalidf("cluster %s: %s pinned to it %s not ended: %s: cancel them (coordinator job cancel ID) or wait for them to end",
			c.Name, plural(len(jobs), "job"), map[bool]string{true: "has", false: "have"}[len(jobs) == 1], listSome(jobs))
	}
	delete(s.Clusters, c.Name)
	s.admitter = nil // the clusters decide what jobs may name
	return nil, nil
}

// plural writes "1 node", "3 nodes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// listSome joins up to five names, saying how many more there are.
func listSome(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}
