package structs

import "time"

// Pool is a set of nodes. The public pool is shared and quota-limited; a
// project pool is reserved for one project's members, has no quota and may
// lend idle nodes to low-priority work.
type Pool struct {
	Name     PoolID    `json:"name"`
	Project  ProjectID `json:"project,omitempty"` // empty for the public pool
	Members  []UserID  `json:"members,omitempty"`
	LendIdle bool      `json:"lendIdle,omitempty"` // low jobs may borrow idle nodes
	// MaxPreemptNotice bounds its jobs' preemption notices; 0:
	// DefaultMaxPreemptNotice.
	MaxPreemptNotice Duration `json:"maxPreemptNotice,omitempty"`
	// MinRuntime is how long its low jobs (a service: each replica) run
	// before they are preempted while other low work could go instead
	// (and at all: with no other choice the preemptor waits); 0: none.
	MinRuntime Duration `json:"minRuntime,omitempty"`
}

// MaxMinRuntime bounds a pool's minRuntime.
const MaxMinRuntime = 24 * time.Hour

// IsPublic reports whether p is the public pool.
func (p *Pool) IsPublic() bool { return p.Name == PublicPool || p.Project == "" }

// HasMember reports whether u may use and operate the pool's project jobs.
func (p *Pool) HasMember(u UserID) bool {
	for _, m := range p.Members {
		if m == u {
			return true
		}
	}
	return false
}
