// Package ui is the coordinator's web dashboard, served by every
// coordinator at /ui: an overview, the queue with why-pending, jobs and
// their tasks, events and logs, quotas and nodes with their accelerators.
//
// Pages are Go templates rendered on the server (templates/, embedded)
// with one small hand-written script (static/ui.js) that refreshes the
// live part of a page every few seconds, follows logs and confirms
// cancels; no build step (README.md says why).
//
// Access is the API's: people sign in with their API token, which is
// kept in an HttpOnly, SameSite=Strict cookie; what they see follows
// api.Viewer (their own and their projects' jobs, admins everything).
// The list pages read the replicated state directly (Config.Store); the
// job page, logs, cancel and scale go through the API handler in-process
// with the user's token (Config.API), so they get its checks, its
// catch-up on a lagging server and its forwarding of writes to the
// leader. Every POST needs the session's CSRF token and a same-origin
// request.
package ui

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
)

// Config configures the dashboard.
type Config struct {
	// Store is the replicated state the list pages read.
	Store api.Store
	// API is the coordinator's /v1 handler (api.New), called in-process.
	API http.Handler
	// Tokens are the users, as the API has them.
	Tokens api.TokenFile
	// Clock gives the time ages are measured to; nil means time.Now.
	Clock func() time.Time
	// CatchUp, if set, is called before a page reads the state: on a
	// server that has not caught up with the cluster since it started,
	// it waits until it has (or fails, and the page says to retry), as
	// the API's reads do.
	CatchUp func(r *http.Request) error
}

// Prefix is where the dashboard is served.
const Prefix = "/ui/"

//go:embed templates static
var files embed.FS

// auth says who may call a route.
type auth int

const (
	authNone auth = iota // anyone (sign-in, static files)
	authUser             // a signed-in user
	authCSRF             // a signed-in user, with the session's CSRF token
)

type server struct {
	store  api.Store
	api    http.Handler
	users  *api.Users
	clock  func() time.Time
	mux    *http.ServeMux
	pages  map[string]*template.Template
	static fs.FS
	assets string   // a hash of the static files, so browsers fetch new ones after an upgrade
	served []string // the patterns registered, for the access test
	// cop refuses cross-origin writes before any handler runs (each
	// write checks the CSRF token as well).
	cop     *http.CrossOriginProtection
	catchUp func(*http.Request) error // nil: the state is current
}

// New returns the dashboard's handler; mount it at Prefix.
func New(cfg Config) http.Handler {
	s := &server{store: cfg.Store, api: cfg.API, users: api.NewUsers(cfg.Tokens), clock: cfg.Clock, mux: http.NewServeMux(),
		cop: http.NewCrossOriginProtection(), catchUp: cfg.CatchUp}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.static, _ = fs.Sub(files, "static")
	s.assets = assetsHash(s.static)
	s.pages = parsePages()
	s.routes()
	return s
}

func (s *server) routes() {
	s.handle("GET /ui/static/{file}", authNone, s.serveStatic)
	s.handle("GET /ui/signin", authNone, s.signInPage)
	s.handle("POST /ui/signin", authNone, s.signIn)
	s.handle("POST /ui/signout", authCSRF, s.signOut)

	s.handle("GET /ui/{$}", authUser, s.overview)
	s.handle("GET /ui/queue", authUser, s.queue)
	s.handle("GET /ui/jobs", authUser, s.jobs)
	s.handle("GET /ui/jobs/{id}", authUser, s.job)
	s.handle("GET /ui/jobs/{id}/logs", authUser, s.logs)
	s.handle("POST /ui/jobs/{id}/cancel", authCSRF, s.cancel)
	s.handle("POST /ui/jobs/{id}/scale", authCSRF, s.scale)
	s.handle("GET /ui/quotas", authUser, s.quotas)
	s.handle("GET /ui/nodes", authUser, s.nodes)
}

// ServeHTTP routes r; paths under /ui that no route takes get a 404 page.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if err := s.cop.Check(r); err != nil {
		s.fail(w, r, nil, http.StatusForbidden, "This request came from another site: the dashboard only takes forms from its own pages.")
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.fail(w, r, nil, http.StatusNotFound, "There is no page "+r.URL.Path+" here.")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// handler serves one route for a signed-in user (zero for authNone).
type handler func(w http.ResponseWriter, r *http.Request, u *session)

func (s *server) handle(pattern string, a auth, h handler) {
	s.served = append(s.served, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if a == authNone {
			h(w, r, nil)
			return
		}
		u := s.session(r)
		if u == nil {
			s.signInFirst(w, r)
			return
		}
		if s.catchUp != nil {
			if err := s.catchUp(r); err != nil {
				s.fail(w, r, u, http.StatusServiceUnavailable, "This server has not caught up with the cluster since it started ("+err.Error()+"): reload in a moment, or open another server's dashboard.")
				return
			}
		}
		if a == authCSRF && !u.checkCSRF(r) {
			s.fail(w, r, u, http.StatusForbidden, "This form has expired or did not come from this dashboard: reload the page and try again.")
			return
		}
		h(w, r, u)
	})
}

// securityHeaders: pages run only their own script and style, are never
// framed, cached or sniffed, and send no referrer elsewhere.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
