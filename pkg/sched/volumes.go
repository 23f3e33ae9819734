package sched

import (
	"fmt"

	"github.com/atom-sched/atom/pkg/structs"
)

// volumeUse is who mounts each persistent volume claim: a claim mounted
// read-write is one job's alone; read-only, any number of jobs may share
// it, but none writes it meanwhile. Claims are named the same in every
// cluster.
type volumeUse struct {
	writer  map[string]structs.JobID
	readers map[string]structs.JobID // one of the readers, to name
}

// newVolumeUse is the claims mounted by the jobs that hold resources.
func newVolumeUse(snap *Snapshot) *volumeUse {
	u := &volumeUse{writer: map[string]structs.JobID{}, readers: map[string]structs.JobID{}}
	any := false
	for _, j := range snap.Jobs {
		if len(j.Volumes) > 0 {
			any = true
			break
		}
	}
	if !any {
		return u // the common case: no job mounts a volume, nothing to look up per task
	}
	for _, t := range snap.Tasks {
		if j := snap.Jobs[t.Job]; j != nil {
			u.add(j)
		}
	}
	return u
}

func (u *volumeUse) add(j *structs.Job) {
	for _, v := range j.Volumes {
		if v.ReadOnly {
			if _, ok := u.readers[v.Claim]; !ok {
				u.readers[v.Claim] = j.ID
			}
		} else if _, ok := u.writer[v.Claim]; !ok {
			u.writer[v.Claim] = j.ID
		}
	}
}

// wait says why j must wait for a volume another job mounts, or "".
func (u *volumeUse) wait(j *structs.Job) string {
	for _, v := range j.Volumes {
		if w, ok := u.writer[v.Claim]; ok && w != j.ID {
			return fmt.Sprintf("waits for volume %s: job %s mounts it read-write (one job at a time)", v.Claim, w)
		}
		if r, ok := u.readers[v.Claim]; ok && r != j.ID && !v.ReadOnly {
			return fmt.Sprintf("waits for volume %s: job %s mounts it read-only, and a volume is written by one job while no other mounts it", v.Claim, r)
		}
	}
	return ""
}
