package ui_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/ui"
	"github.com/atom-sched/atom/pkg/structs"
)

// The dashboard's access matrix: every route for every kind of caller.
// Users sign in with their API token (the session cookie); pages without
// a session send the browser to sign in (303), writes without one are
// refused (401); a job another user may not see is not found, as in the
// API.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	type caller string
	const (
		owner, other, member, admin caller = "owner u1", "other u2", "member m1", "admin"
		none, garbage               caller = "no session", "unknown token"
	)
	callers := []caller{owner, other, member, admin, none, garbage}
	const ok, seeOther, unauth, notfound, notimpl = 200, 303, 401, 404, 501
	type row struct {
		method, path string
		form         url.Values // POST body; the caller's CSRF token is added
		users        [4]int     // owner, other, member, admin
		anon         int        // no session, or an unknown token
	}
	page := func(path string) row { return row{"GET", path, nil, [4]int{ok, ok, ok, ok}, seeOther} }
	job := [4]int{ok, notfound, ok, ok}
	written := [4]int{seeOther, notfound, seeOther, seeOther}
	rows := []row{
		page("/ui/"),
		page("/ui/queue"),
		page("/ui/jobs"),
		page("/ui/jobs?state=Running&sort=-gpus&page=2"),
		page("/ui/quotas"),
		page("/ui/nodes"),
		page("/ui/nodes?pool=perception&type=A100"),
		{"GET", "/ui/jobs/web-1", nil, job, seeOther},
		{"GET", "/ui/jobs/web-1/logs?task=web-1-0-a0", nil, job, seeOther},
		{"GET", "/ui/jobs/nosuch-1", nil, [4]int{notfound, notfound, notfound, notfound}, seeOther},
		{"POST", "/ui/jobs/web-1/cancel", url.Values{}, written, unauth},
		{"POST", "/ui/jobs/web-1/scale", url.Values{"replicas": {"1"}}, written, unauth},
		{"POST", "/ui/signout", url.Values{}, [4]int{seeOther, seeOther, seeOther, seeOther}, unauth},
		// Signed in already: straight on.
		{"GET", "/ui/signin", nil, [4]int{seeOther, seeOther, seeOther, seeOther}, ok},
		// Signing in needs no session; a wrong token is refused.
		{"POST", "/ui/signin", url.Values{"token": {"not-a-token-at-all"}}, [4]int{unauth, unauth, unauth, unauth}, unauth},
		{"GET", "/ui/static/ui.css", nil, [4]int{ok, ok, ok, ok}, ok},
		{"GET", "/ui/static/nosuch.js", nil, [4]int{notfound, notfound, notfound, notfound}, notfound},
	}
	t.Run("every route has a row", func(t *testing.T) {
		mux := http.NewServeMux()
		routes := ui.Routes(ui.New(ui.Config{}))
		for _, p := range routes {
			mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
		covered := map[string]bool{}
		for _, r := range rows {
			_, p := mux.Handler(httptest.NewRequest(r.method, r.path, nil))
			require.NotEmpty(t, p, "row %s %s matches no route", r.method, r.path)
			covered[p] = true
		}
		for _, p := range routes {
			assert.True(t, covered[p], "route %s has no row in the access matrix: add one with every caller's status", p)
		}
	})
	for _, r := range rows {
		for _, c := range callers {
			want := r.anon
			user := map[caller]structs.UserID{owner: "u1", other: "u2", member: "m1", admin: "admin"}[c]
			switch c {
			case owner:
				want = r.users[0]
			case other:
				want = r.users[1]
			case member:
				want = r.users[2]
			case admin:
				want = r.users[3]
			}
			t.Run(r.method+" "+r.path+"/"+string(c), func(t *testing.T) {
				t.Parallel()
				e, _ := placed(t)
				q := req{method: r.method, path: r.path, user: user}
				if c == garbage {
					q.cookie = apitest.NewToken()
				}
				if r.form != nil {
					q.form = url.Values{}
					for k, v := range r.form {
						q.form[k] = v
					}
					if user != "" && r.path != "/ui/signin" {
						q.form.Set("csrf", e.csrf(t, user))
					}
				}
				before := e.store.StateJSON(t)
				status, body, _ := e.do(t, q)
				assert.Equal(t, want, status, body)
				if status >= 400 {
					assert.Equal(t, before, e.store.StateJSON(t), "a refused request changes nothing")
				}
			})
		}
	}
}
