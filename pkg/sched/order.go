package sched

import (
	"cmp"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// order sorts one cycle's pending jobs into the order they are decided
// in (Schedule step 2): higher priority first, then the longest pending,
// then by ID so the order is total. A job decided earlier takes the room
// it fits in before jobs behind it; a job that does not fit never stops
// the jobs behind it (backfill). A new ordering criterion (a scope's fair
// share, say) is one more comparison here, between priority and age,
// with what it reads added to the Snapshot.
func order(jobs []*structs.Job) {
	slices.SortFunc(jobs, func(a, b *structs.Job) int {
		if a.Priority != b.Priority {
			return int(b.Priority) - int(a.Priority)
		}
		if c := pendingSince(a).Compare(pendingSince(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
