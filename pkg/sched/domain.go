package sched

// domain is a set of nodes that the replicas placed together in one
// decision stay within: one pool of one cluster for a gang (a spark
// driver with its minimum executors too), one cluster for other jobs
// (pool -1). Nodes are grouped by domain (world.groups, whose order is
// cluster, then pool), placement tries one domain at a time (clusterOrder,
// then the pool levels of newCtx), and explanations and gang reservations
// count replicas per domain.
type domain struct{ cluster, pool int16 }

// domainOf is the domain of group g's nodes for a job placed together
// (gang) or not.
func domainOf(g *group, gang bool) domain {
	if gang {
		return domain{g.cluster, g.pool}
	}
	return domain{g.cluster, -1}
}
