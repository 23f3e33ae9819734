package server

import (
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// claimsFor is Snapshot.Volumes for the pending jobs: nil when none names
// a volume or the backend finds no claims (Capabilities.Claims); a job
// then goes only to a cluster holding all of its volumes.
func (d *driver) claimsFor(pending []*structs.Job) map[structs.ClusterID]map[string]bool {
	var names []string
	for _, j := range pending {
		for _, v := range j.Volumes {
			if !slices.Contains(names, v.Claim) {
				names = append(names, v.Claim)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	b := d.backend()
	if b == nil {
		return nil
	}
	claims := b.Capabilities().Claims
	if claims == nil {
		return nil
	}
	return claims(names)
}
