package ui_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/ui"
	"github.com/atom-sched/atom/pkg/structs"
)

// Signing in keeps the token in an HttpOnly, SameSite=Strict cookie for
// /ui only and goes where the user was headed, on this site only; a wrong
// token is refused without being shown again; signing out forgets it.
func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	status, _, resp := e.do(t, req{path: "/ui/jobs?state=Running"})
	require.Equal(t, http.StatusSeeOther, status)
	assert.Equal(t, "/ui/signin?next=%2Fui%2Fjobs%3Fstate%3DRunning", resp.Header.Get("Location"))

	status, body, _ := e.do(t, req{method: "POST", path: "/ui/signin", form: url.Values{"token": {"wrong-token-0123456789"}, "next": {"/ui/jobs"}}})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "That token is not valid here")
	assert.NotContains(t, body, "wrong-token-0123456789", "a refused token is not shown again")

	for next, want := range map[string]string{
		"/ui/jobs?state=Running": "/ui/jobs?state=Running",
		"//evil.example/ui/":     "/ui/",
		"https://evil.example/":  "/ui/",
		"/v1/jobs":               "/ui/",
		"":                       "/ui/",
	} {
		status, _, resp = e.do(t, req{method: "POST", path: "/ui/signin", form: url.Values{"token": {e.tokens["u1"]}, "next": {next}}})
		require.Equal(t, http.StatusSeeOther, status, next)
		assert.Equal(t, want, resp.Header.Get("Location"), "next %q", next)
	}
	var c *http.Cookie
	for _, x := range resp.Cookies() {
		if x.Name == "atom_session" {
			c = x
		}
	}
	require.NotNil(t, c)
	assert.Equal(t, e.tokens["u1"], c.Value)
	assert.True(t, c.HttpOnly, "scripts cannot read the token")
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, "/ui", c.Path, "the API never receives the cookie")
	assert.False(t, c.Secure, "plain HTTP here; over HTTPS it is Secure")

	status, _, resp = e.do(t, req{method: "POST", path: "/ui/signout", user: "u1", form: url.Values{"csrf": {e.csrf(t, "u1")}}})
	require.Equal(t, http.StatusSeeOther, status)
	assert.Equal(t, "/ui/signin", resp.Header.Get("Location"))
	require.Len(t, resp.Cookies(), 1)
	assert.Equal(t, -1, resp.Cookies()[0].MaxAge, "signing out removes the cookie")

	// A cookie whose token is no longer valid is removed as well.
	status, _, resp = e.do(t, req{path: "/ui/", cookie: "revoked-token-0123456789"})
	assert.Equal(t, http.StatusSeeOther, status)
	require.Len(t, resp.Cookies(), 1)
	assert.Equal(t, -1, resp.Cookies()[0].MaxAge)
}

// Writes need the session's own CSRF token and a same-origin request;
// a refused write changes nothing.
func TestWritesNeedCSRF(t *testing.T) {
	t.Parallel()
	e, _ := placed(t)
	mine, theirs := e.csrf(t, "u1"), e.csrf(t, "u2")
	require.NotEqual(t, mine, theirs, "each user has their own token")
	assert.Equal(t, mine, e.csrf(t, "u1"), "the same token on every page (and server)")
	before := e.store.StateJSON(t)
	for name, r := range map[string]req{
		"no token":           {method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{}},
		"wrong token":        {method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{"csrf": {"x" + mine[1:]}}},
		"another user's":     {method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{"csrf": {theirs}}},
		"token in the query": {method: "POST", path: "/ui/jobs/web-1/cancel?csrf=" + mine, user: "u1", form: url.Values{}},
		"scale, no token":    {method: "POST", path: "/ui/jobs/web-1/scale", user: "u1", form: url.Values{"replicas": {"0"}}},
		"sign out, no token": {method: "POST", path: "/ui/signout", user: "u1", form: url.Values{}},
		"another site":       {method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{"csrf": {mine}}, header: []string{"Sec-Fetch-Site", "cross-site"}},
		"another origin":     {method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{"csrf": {mine}}, header: []string{"Origin", "https://evil.example"}},
	} {
		status, _, _ := e.do(t, r)
		assert.Equal(t, http.StatusForbidden, status, name)
	}
	assert.Equal(t, before, e.store.StateJSON(t), "refused writes change nothing")

	status, _, resp := e.do(t, req{method: "POST", path: "/ui/jobs/web-1/scale", user: "u1", form: url.Values{"csrf": {mine}, "replicas": {"3"}}})
	require.Equal(t, http.StatusSeeOther, status)
	assert.Equal(t, "/ui/jobs/web-1?done=scale", resp.Header.Get("Location"))
	assert.Equal(t, 3, e.store.Job("web-1").Replicas)
	assert.Contains(t, e.page(t, "u1", "/ui/jobs/web-1?done=scale"), "Scaled to 3 replicas.")

	// The script sends the token as a header.
	status, _, _ = e.do(t, req{method: "POST", path: "/ui/jobs/web-1/cancel", user: "m1", header: []string{"X-CSRF-Token", e.csrf(t, "m1"), "X-Atom-Live", "1"}})
	require.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, structs.JobCancelled, e.store.Job("web-1").State, "a project member cancels the project's job")

	// The API's refusals show as they are.
	status, body, _ := e.do(t, req{method: "POST", path: "/ui/jobs/web-1/cancel", user: "u1", form: url.Values{"csrf": {mine}}})
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "job web-1 is already cancelled and its tasks are stopping (each gets its stop grace, then SIGKILL): there is nothing more to cancel")
	status, body, _ = e.do(t, req{method: "POST", path: "/ui/jobs/web-1/scale", user: "u1", form: url.Values{"csrf": {mine}, "replicas": {"two"}}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "replicas &#34;two&#34; is not a number")
}

// The script's refreshes get the live part of a page, and a 401 (not a
// redirect) once the session has ended.
func TestLiveFragments(t *testing.T) {
	t.Parallel()
	e, _ := placed(t)
	live := []string{"X-Atom-Live", "1"}
	for _, path := range []string{"/ui/", "/ui/queue", "/ui/jobs", "/ui/jobs/web-1", "/ui/quotas", "/ui/nodes"} {
		status, body, _ := e.do(t, req{path: path, user: "u1", header: live})
		require.Equal(t, http.StatusOK, status, path)
		assert.NotContains(t, body, "<html", path)
		assert.NotContains(t, body, "<form", "%s: forms stay outside the live part", path)
		assert.True(t, strings.Contains(body, "<table") || strings.Contains(body, "<section"), path)
		status, body, _ = e.do(t, req{path: path, header: live})
		assert.Equal(t, http.StatusUnauthorized, status, path)
		assert.Equal(t, "Sign in first: your session has ended or was never started.\n", body)
	}
	status, body, _ := e.do(t, req{path: "/ui/jobs/web-1", user: "u2", header: live})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "job web-1 not found\n", body)
}

// A server that has not caught up since it started says so instead of
// showing a state that may lag (as the API's reads do).
func TestNotCaughtUp(t *testing.T) {
	t.Parallel()
	e, _ := placed(t)
	h := ui.New(ui.Config{Store: e.store, API: e.api, Tokens: e.tf, CatchUp: func(*http.Request) error { return errors.New("no leader known") }})
	for _, path := range []string{"/ui/", "/ui/jobs", "/ui/jobs/web-1"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(&http.Cookie{Name: "atom_session", Value: e.tokens["u1"]})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		assert.Contains(t, rec.Body.String(), "This server has not caught up with the cluster since it started (no leader known)", path)
	}
}
