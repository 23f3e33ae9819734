package sched

// domain is a set of nodes that the replicas placed together in one
// decision stay within: one pool of one cluster for a gang (a spark
// driver with its minimum executors too), one cluster for other jobs
// (pool -1), and for a job that requires a topology level one domain of
// that level too (topo, an index into world.topo.doms; -1 otherwise).
// Nodes are grouped by cluster and pool (world.groups, whose order is
// cluster, then pool), placement tries one cluster and pool at a time
// (clusterOrder, then the pool levels of newCtx) and one topology domain
// at a time (placeTopo, topology.go), and explanations and gang
// reservations count replicas per domain.
type domain struct {
	cluster, pool int16
	topo          int32
}

// domainOf is the domain of group g's nodes for a job placed together
// (gang) or not, before topology (domainAt).
func domainOf(g *group, gang bool) domain {
	if gang {
		return domain{g.cluster, g.pool, -1}
	}
	return domain{g.cluster, -1, -1}
}

// domainAt is d, the domain of node ni's group, cut to the topology
// domain of ni that c requires (-1 when it requires none, or ni is in
// none).
func (w *world) domainAt(c *jobCtx, ni int32, d domain) domain {
	if !c.required() {
		return d
	}
	n := &w.nodes[ni]
	if l := c.tl[n.cluster]; l >= 0 && n.doms != nil {
		d.topo = n.doms[l]
	}
	return d
}
