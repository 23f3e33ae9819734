package server_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workLog records which servers run their leader work now, and every start.
type workLog struct {
	mu      sync.Mutex
	running map[string]int
	starts  []string
}

func (w *workLog) work(id string) func(context.Context) {
	return func(ctx context.Context) {
		w.mu.Lock()
		w.running[id]++
		w.starts = append(w.starts, id)
		w.mu.Unlock()
		<-ctx.Done()
		w.mu.Lock()
		w.running[id]--
		w.mu.Unlock()
	}
}

// runs returns the servers running their work now and the starts so far.
func (w *workLog) runs() (map[string]int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for id, n := range w.running {
		if n != 0 {
			out[id] = n
		}
	}
	return out, append([]string(nil), w.starts...)
}

// Work added with AddLeaderWork runs on the leader only: at once when
// added during a term, again in every later term, and stops when the
// term ends; followers never run it.
func TestAddLeaderWork(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil)
	old := c.leader()
	w := &workLog{running: map[string]int{}}
	for _, s := range c.live() {
		s.AddLeaderWork(w.work(s.ID()))
	}
	require.Eventually(t, func() bool { r, _ := w.runs(); return r[old.ID()] == 1 }, waitFor, tick,
		"work added during a term runs in it")
	r, starts := w.runs()
	assert.Equal(t, map[string]int{old.ID(): 1}, r, "only the leader runs it")
	assert.Equal(t, []string{old.ID()}, starts)

	c.stop(c.index(old))
	nl := c.leader()
	var last []string
	require.Eventually(t, func() bool {
		r, last = w.runs()
		return r[nl.ID()] == 1 && r[old.ID()] == 0
	}, waitFor, tick, "the new leader runs it, the old one stopped it")
	r, _ = w.runs()
	assert.Equal(t, map[string]int{nl.ID(): 1}, r)
	assert.Equal(t, []string{old.ID(), nl.ID()}, last)
}
