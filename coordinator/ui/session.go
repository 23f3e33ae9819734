package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/atom-sched/atom/coordinator/api"
)

// cookieName holds the signed-in user's API token: HttpOnly (no script
// reads it), SameSite=Strict (no other site's request carries it), Path
// /ui (the API never sees it), Secure over HTTPS. The browser forgets it
// when it closes or the user signs out.
const cookieName = "atom_session"

// session is a signed-in user. user.Token is their API token: it goes
// only into in-process API requests, never into a page.
type session struct {
	user api.User
	csrf string
}

// session returns r's signed-in user, or nil.
func (s *server) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	u, ok := s.users.Find(c.Value)
	if !ok {
		return nil
	}
	return &session{user: u, csrf: csrfToken(u.Token)}
}

// csrfToken is the session's CSRF token: an HMAC keyed by the user's API
// token, so every coordinator of the cluster derives the same one (a form
// rendered by one server may be posted to another), another site cannot
// compute it, and it reveals nothing about the token.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("atom ui csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether r carries the session's CSRF token, in the
// form field csrf or the X-CSRF-Token header (the script's requests).
func (u *session) checkCSRF(r *http.Request) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
		got = r.PostFormValue("csrf")
	}
	return got != "" && hmac.Equal([]byte(got), []byte(u.csrf))
}

// maxForm bounds a form's body.
const maxForm = 16 << 10

// live reports whether r is the script's refresh of a page's live part
// (or any request of the script): such requests get fragments and plain
// errors, not pages and redirects.
func live(r *http.Request) bool { return r.Header.Get("X-Atom-Live") != "" }

// signInFirst answers a request without a valid session: a page asks the
// browser to sign in and come back; the script's requests and forms get
// 401 (the script then reloads, which lands on the sign-in page).
func (s *server) signInFirst(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil && c.Value != "" {
		http.SetCookie(w, s.cookie(r, "")) // a token no longer valid: forget it
	}
	if r.Method == http.MethodGet && !live(r) {
		http.Redirect(w, r, "/ui/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	s.fail(w, r, nil, http.StatusUnauthorized, "Sign in first: your session has ended or was never started.")
}

// cookie returns the session cookie holding token ("" removes it).
func (s *server) cookie(r *http.Request, token string) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: token, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if token == "" {
		c.MaxAge = -1
	}
	return c
}

// next returns where to go after signing in: a dashboard path of this
// server, never another site.
func next(raw string) string {
	if !strings.HasPrefix(raw, Prefix) || strings.ContainsAny(raw, "\\\r\n") || strings.HasPrefix(raw, "//") {
		return Prefix
	}
	return raw
}

type signInView struct {
	Next, Error string
}

// signInPage: GET /ui/signin.
func (s *server) signInPage(w http.ResponseWriter, r *http.Request, _ *session) {
	to := next(r.URL.Query().Get("next"))
	if s.session(r) != nil {
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	s.render(w, r, nil, http.StatusOK, "signin", "Sign in", signInView{Next: to})
}

// signIn: POST /ui/signin with token (and next). A wrong token is
// refused without being shown again.
func (s *server) signIn(w http.ResponseWriter, r *http.Request, _ *session) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	to := next(r.PostFormValue("next"))
	if _, ok := s.users.Find(tok); tok == "" || !ok {
		s.render(w, r, nil, http.StatusUnauthorized, "signin", "Sign in", signInView{Next: to,
			Error: "That token is not valid here: use a user token from the coordinator's tokens file (the one the CLI uses as ATOM_TOKEN)."})
		return
	}
	http.SetCookie(w, s.cookie(r, tok))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// signOut: POST /ui/signout.
func (s *server) signOut(w http.ResponseWriter, r *http.Request, _ *session) {
	http.SetCookie(w, s.cookie(r, ""))
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}
