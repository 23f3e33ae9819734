package sched_test

import (
	"testing"
	"time"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/stretchr/testify/assert"
)

// Between two single victims, the one that ran less goes, though it
// frees more than needed: an hour on one GPU is lost work, a second GPU
// freed is room for others. Earlier releases (ResourcesBeforeWork) took
// the one freeing the fewest accelerators.
func TestPreemptionLosesTheLeastWork(t *testing.T) {
	for _, old := range []bool{false, true} {
		h := st.New(t, st.G8("n1", "A"), st.G8("n2", "A"))
		h.Quota(u1, gpuA(16))
		h.MustSubmit(st.NewJob("f1", "u1").GPU("A", 7).Node("n1").Obj())
		h.MustSubmit(st.NewJob("f2", "u1").GPU("A", 6).Node("n2").Obj())
		h.MustSubmit(st.NewJob("hour", "lu").Low().GPU("A", 1).Node("n1").Obj())
		h.Cycle()
		h.Advance(59 * time.Minute)
		h.MustSubmit(st.NewJob("minute", "lu").Low().GPU("A", 2).Node("n2").Obj())
		h.Cycle()
		h.Advance(time.Minute)

		h.MustSubmit(st.NewJob("n", "u1").GPU("A", 1).Obj())
		h.ResourcesBeforeWork = old
		h.Cycle()
		if old {
			assert.Equal(t, []string{"hour"}, h.Victims(), "fewest accelerators first")
		} else {
			assert.Equal(t, []string{"minute"}, h.Victims(), "least work first")
		}
	}
}
