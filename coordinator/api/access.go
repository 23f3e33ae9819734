package api

import (
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// The API's access rules for other front ends of the same state (the web
// dashboard, coordinator/ui), so they show exactly what the API would.

// Users finds users by their token as the API does: by the token's
// SHA-256, so timing reveals nothing about stored tokens.
type Users struct{ byHash map[[32]byte]User }

// NewUsers indexes a tokens file (from LoadTokens or ParseTokens). The
// first of two users with the same token wins; entries without a name or
// token never authenticate.
func NewUsers(f TokenFile) *Users {
	u := &Users{byHash: map[[32]byte]User{}}
	for _, x := range f.Users {
		if x.Token == "" || x.Name == "" {
			continue
		}
		if _, dup := u.byHash[hashToken(x.Token)]; !dup {
			u.byHash[hashToken(x.Token)] = x
		}
	}
	return u
}

// Find returns the user whose token is token.
func (u *Users) Find(token string) (User, bool) {
	x, ok := u.byHash[hashToken(token)]
	return x, ok
}

// Viewer is what one user may see in one state: admins everything, users
// their own jobs and the jobs of projects whose pools list them, and the
// quotas of the same scopes.
type Viewer struct {
	c    caller
	mine map[structs.ProjectID]bool
}

// ViewerOf returns u's view of st (read under Store.Read).
func ViewerOf(st *state.State, u User) Viewer {
	return Viewer{c: caller{user: u.Name, admin: u.Admin}, mine: projects(st, u.Name)}
}

// Job reports whether the viewer may see (and operate) j.
func (v Viewer) Job(j *structs.Job) bool { return v.c.canSeeJob(j, v.mine) }

// Scope reports whether the viewer may read scope's quota.
func (v Viewer) Scope(s structs.Scope) bool { return v.c.canSeeScope(s, v.mine) }
