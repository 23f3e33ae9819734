package structs

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
}

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
