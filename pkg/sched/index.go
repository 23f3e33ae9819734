package sched

// buckets indexes the nodes of one group by a small integer key: free
// accelerators for accelerator nodes, free whole cores (capped) for CPU
// nodes. Moving a node between buckets is O(1), so placing a replica never
// rescans every node: a best-fit search walks buckets upward from the
// replica's need and stops at the first node that fits.
type buckets struct {
	b [][]int32 // key -> node indices (order: insertion, swap-removal)
}

const maxCPUKey = 1024 // CPU buckets above 1024 free cores share the last one

func newBuckets(maxKey int) *buckets { return &buckets{b: make([][]int32, maxKey+1)} }

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

// add puts node i into bucket k and records its position.
func (s *buckets) add(w *world, i int32, k int) {
	k = s.clamp(k)
	n := &w.nodes[i]
	n.key, n.pos = int32(k), int32(len(s.b[k]))
	s.b[k] = append(s.b[k], i)
}

// remove takes node i out of its bucket.
func (s *buckets) remove(w *world, i int32) {
	n := &w.nodes[i]
	l := s.b[n.key]
	last := l[len(l)-1]
	l[n.pos] = last
	w.nodes[last].pos = n.pos
	s.b[n.key] = l[:len(l)-1]
}

// move re-files node i under key k.
func (s *buckets) move(w *world, i int32, k int) {
	if int(w.nodes[i].key) == s.clamp(k) {
		return
	}
	s.remove(w, i)
	s.add(w, i, k)
}
