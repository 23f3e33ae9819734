package sched

// buckets indexes some nodes by a small integer key: free accelerators for
// accelerator nodes, free whole cores (capped) for CPU nodes. Each group
// has one over its nodes, and each topology domain one per group over the
// group's nodes in it (topology.go). Moving a node between buckets is
// O(1), so placing a replica never rescans every node: a best-fit search
// walks buckets upward from the replica's need and stops at the first
// node that fits.
type buckets struct {
	b [][]int32 // key -> node indices (order: insertion, swap-removal)
	// pos is each node's position in its bucket, by node index: shared
	// by the indexes of one layer (the groups', or one topology level's
	// domains), since a node is in at most one index of a layer.
	pos []int32
}

const maxCPUKey = 1024 // CPU buckets above 1024 free cores share the last one

func newBuckets(maxKey int, pos []int32) *buckets {
	return &buckets{b: make([][]int32, maxKey+1), pos: pos}
}

func (s *buckets) maxKey() int { return len(s.b) - 1 }

func (s *buckets) clamp(k int) int {
	if k < 0 {
		return 0
	}
	if k > s.maxKey() {
		return s.maxKey()
	}
	return k
}

// add puts node i into bucket k (clamped already) and records its position.
func (s *buckets) add(i int32, k int) {
	s.pos[i] = int32(len(s.b[k]))
	s.b[k] = append(s.b[k], i)
}

// remove takes node i out of bucket k.
func (s *buckets) remove(i int32, k int) {
	l := s.b[k]
	last := l[len(l)-1]
	p := s.pos[i]
	l[p] = last
	s.pos[last] = p
	s.b[k] = l[:len(l)-1]
}

// file puts node i into its group's index and its domains' under its key.
func (w *world) file(i int32) {
	n := &w.nodes[i]
	g := w.groups[n.group]
	k := g.idx.clamp(w.keyOf(i, g))
	n.key = int32(k)
	g.idx.add(i, k)
	for _, b := range n.tidx {
		b.add(i, k)
	}
}

// refile moves node i to the bucket of its key now, in every index it is in.
func (w *world) refile(i int32) {
	n := &w.nodes[i]
	g := w.groups[n.group]
	k := g.idx.clamp(w.keyOf(i, g))
	old := int(n.key)
	if k == old {
		return
	}
	n.key = int32(k)
	g.idx.remove(i, old)
	g.idx.add(i, k)
	for _, b := range n.tidx {
		b.remove(i, old)
		b.add(i, k)
	}
}
