package server

import (
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// ClaimFinder is a Backend that knows which clusters hold which persistent
// volume claims (the Kubernetes backends' claim informers). The leader
// asks it about the claims the pending jobs name, so that each job goes
// only to a cluster holding all of its volumes (sched.Snapshot.Volumes).
// A backend without it (local clusters only) leaves volumes unchecked.
type ClaimFinder interface {
	// Claims returns, for every kubernetes cluster, which of names it
	// holds (an empty map for a cluster holding none).
	Claims(names []string) map[structs.ClusterID]map[string]bool
}

// claimsFor is Snapshot.Volumes for the pending jobs: nil when none names
// a volume or the backend finds no claims.
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
	cf, ok := d.backend().(ClaimFinder)
	if !ok {
		return nil
	}
	return cf.Claims(names)
}
