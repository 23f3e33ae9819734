// Package api is the coordinator's HTTP/JSON API: jobs,
// services, quotas, pools, nodes and clusters for people and their tools,
// and heartbeats and peer lookups for atom. Bodies are the types of
// pkg/wire; errors are {"error": "..."} with a status that says
// what to do:
//
//	400 bad input (the message names the field and what is allowed)
//	401 no token, or one that is not valid for this endpoint
//	403 the token is valid but may not do this
//	404 no such object (or one the caller may not see)
//	409 already exists, already ended, still in use, or over quota
//	422 the request is valid but can never be satisfied
//	503 not the leader or the outcome is unknown: retry (same request ID)
//
// Authentication is by bearer tokens. User tokens come from a tokens file
// (TokenFile); users act on their own jobs and on the jobs of projects whose
// pool lists them as members; admins see everything and manage quotas,
// pools, nodes and clusters. Each task has its own allocation token, good
// only for that task's heartbeats and its job's peer list; user tokens are
// not accepted there.
//
// The package reads state through Store.Read and changes it only through
// Store.Apply with typed commands that carry the time and IDs (the state
// machine reads no clock). It never writes an allocation token into a
// response, but to the task's own Pod (POST /v1/tasks/{id}/token, its
// bound service-account token vouched for by its cluster).
package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Store is the replicated state as the API uses it; the Raft server
// satisfies it, and apitest.Store does over a bare FSM.
//
// Apply commits one command and returns its result and its domain error
// (the errors of coordinator/state and pkg/sched, which the API maps to
// 4xx), or the fsm.Response that holds them. Any other error means the
// command was not applied or its outcome is unknown (not the leader,
// leadership lost, a timeout): the API answers 503 and asks the client to
// retry, with the same request ID for a submission.
//
// Read calls fn with the current state under a read lock; fn must not keep
// or modify the maps it reads (the objects in them are copy-on-write and
// may be kept).
//
// Why returns the scheduler's latest why-pending reasons for a job, or nil
// when it has none (the job is not pending or was not looked at yet).
//
// Heartbeat records a report from atom about its task. The API has already
// checked token against the task's allocation token, unless this server
// does not know the task yet and its state may lag (Lagging): then
// Heartbeat must check it where the state is current (the leader).
type Store interface {
	Apply(ctx context.Context, c state.Command) (any, error)
	Read(fn func(*state.State))
	Why(id structs.JobID) *sched.Why
	Heartbeat(id structs.TaskID, token string, ev structs.TaskEvent) error
}

// Lagging is implemented by a Store whose state may lag the cluster's (a
// Raft follower, or a leader still catching up): Lagging reports whether
// it does now. What such a server does not know may exist already: the
// API passes the heartbeat of a task it does not know to Store.Heartbeat,
// which takes it to the leader. Before it answers that a job or task is
// not known it calls CatchUp, which returns once the server has applied
// everything the leader had applied when it was called; on a leader, once
// a quorum has confirmed it still leads (a leader cut off may not know
// yet that another has been elected). CatchUp returns an error when it
// cannot (no leader, cut off, ctx ended): the API answers 503.
type Lagging interface {
	Lagging() bool
	CatchUp(ctx context.Context) error
}

// StatusError is an answer from another server that a Store passes on
// (a heartbeat forwarded to the leader): the API answers with its status.
type StatusError struct {
	Status int
	Msg    string
}

func (e *StatusError) Error() string { return e.Msg }

// Config configures the API.
type Config struct {
	// Tokens lists the users and their bearer tokens (LoadTokens).
	Tokens TokenFile
	// Clock gives the time that commands carry; nil means time.Now.
	Clock func() time.Time
	// NewID returns a new job ID for a job named name: the name, "-" and a
	// short random suffix; nil means DefaultNewID.
	NewID func(name string) string
	// Metrics, if set, is served at /metrics (to any user token) and
	// receives the API's own request metrics.
	Metrics *prometheus.Registry
	// Logs, if set, serves GET /v1/jobs/{id}/logs.
	Logs LogSource
	// Volumes, if set, serves /v1/volumes (kubernetes clusters' persistent
	// volumes).
	Volumes VolumeStore
	// PodTokens, if set, serves POST /v1/tasks/{id}/token: task Pods of
	// kubernetes clusters exchange their bound service-account token for
	// their allocation token.
	PodTokens PodTokens
	// Keyring, if set, seals and opens secrets' values (/v1/secrets);
	// without it secrets are refused.
	Keyring *keyring.Keyring
	// PluginKinds, if set, lists the job kinds beyond the built-ins that
	// tasks have plugins for; a job of any other kind is refused at
	// submit (nil: the built-ins only).
	PluginKinds func() []structs.JobKind
}

// Bounds on request bodies other than specs (specs may have
// structs.MaxSpecBytes).
const maxSmallBody = 64 << 10

// New returns the API handler over store. cfg.Tokens should come from
// LoadTokens or ParseTokens, which validate it.
func New(store Store, cfg Config) http.Handler {
	s := &server{store: store, clock: cfg.Clock, newID: cfg.NewID, mux: http.NewServeMux(), logs: cfg.Logs, volumes: cfg.Volumes,
		users: map[[sha256.Size]byte]*User{}, podTokens: cfg.PodTokens, tokenLimit: newTokenLimiter(), keyring: cfg.Keyring,
		plugins: cfg.PluginKinds}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.newID == nil {
		s.newID = DefaultNewID
	}
	for _, u := range cfg.Tokens.Users {
		if u.Token == "" || u.Name == "" {
			continue // never authenticates; ParseTokens refuses these
		}
		if _, dup := s.users[hashToken(u.Token)]; !dup { // the first wins; ParseTokens refuses duplicates
			s.users[hashToken(u.Token)] = &u
		}
	}
	if cfg.Metrics != nil {
		s.metrics = newMetrics(cfg.Metrics)
	}
	s.routes(cfg.Metrics)
	return s
}

// routes registers every endpoint. The auth kind is checked before the
// handler runs: user (any user token), admin (an admin's token), or task
// (the handler checks the allocation token itself).
func (s *server) routes(reg *prometheus.Registry) {
	s.handle("POST /v1/jobs", authUser, s.submitJob)
	s.handle("GET /v1/jobs", authUser, s.listJobs)
	s.handle("GET /v1/jobs/{id}", authUser, s.getJob)
	s.handle("GET /v1/jobs/{id}/why", authUser, s.whyJob)
	s.handle("GET /v1/jobs/{id}/logs", authUser, s.jobLogs)
	s.handle("GET /v1/jobs/{id}/events", authUser, s.jobEvents)
	s.handle("GET /v1/events", authUser, s.listEvents)
	s.handle("POST /v1/jobs/{id}/cancel", authUser, s.cancelJob)
	s.handle("POST /v1/jobs/{id}/scale", authUser, s.scaleJob)

	s.handle("GET /v1/quotas", authUser, s.listQuotas)
	s.handle("GET /v1/quotas/{scope}", authUser, s.getQuota)
	s.handle("PUT /v1/quotas/{scope}", authAdmin, s.putQuota)

	s.handle("GET /v1/pools", authUser, s.listPools)
	s.handle("GET /v1/pools/{name}", authUser, s.getPool)
	s.handle("PUT /v1/pools/{name}", authAdmin, s.putPool)
	s.handle("DELETE /v1/pools/{name}", authAdmin, s.deletePool)

	s.handle("GET /v1/nodes", authUser, s.listNodes)
	s.handle("GET /v1/nodes/{name}", authUser, s.getNode)
	s.handle("PUT /v1/nodes/{name}", authAdmin, s.putNode)
	s.handle("DELETE /v1/nodes/{name}", authAdmin, s.deleteNode)
	s.handle("POST /v1/nodes/{name}/release", authAdmin, s.releaseNode)

	s.handle("GET /v1/clusters", authUser, s.listClusters)
	s.handle("GET /v1/clusters/{name}", authUser, s.getCluster)
	s.handle("PUT /v1/clusters/{name}", authAdmin, s.putCluster)
	s.handle("DELETE /v1/clusters/{name}", authAdmin, s.deleteCluster)

	s.volumeRoutes()
	s.configRoutes()

	s.handle("POST /v1/tasks/{id}/heartbeat", authTask, s.heartbeat)
	s.handle("GET /v1/tasks/{id}/peers", authTask, s.peers)
	s.handle("POST /v1/tasks/{id}/token", authTask, s.taskToken)

	if reg != nil {
		prom := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		s.handle("GET /metrics", authUser, func(w http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
			prom.ServeHTTP(w, r)
			return 0, nil, nil
		})
	}
}

// DefaultNewID returns name + "-" + 5 random lowercase letters and digits,
// shortening name so the ID stays a DNS label (at most 63 characters).
func DefaultNewID(name string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	const n = 5
	if max := 63 - 1 - n; len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("api: no randomness: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return name + "-" + string(b)
}

type server struct {
	store   Store
	clock   func() time.Time
	newID   func(string) string
	mux     *http.ServeMux
	users   map[[sha256.Size]byte]*User // by token hash; read-only after New
	metrics *metrics                    // nil without a registry
	logs    LogSource                   // nil: no logs kept here
	served  []string                    // the patterns handle registered
	volumes VolumeStore                 // nil: no kubernetes cluster
	// podTokens reviews task Pods' tokens (nil: no kubernetes cluster);
	// tokenLimit bounds the exchanges per second.
	podTokens  PodTokens
	tokenLimit *rate.Limiter
	keyring    *keyring.Keyring // nil: no secrets
	plugins    func() []structs.JobKind
}

// ServeHTTP routes r. Requests no route takes get a JSON 404 or 405.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // sets the path values
		return
	}
	// The mux's own answer: 404, 405 (with Allow) or a redirect to a
	// cleaned path. Keep redirects; turn errors into JSON.
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(rec, r)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, errorf(http.StatusMethodNotAllowed, "method %s is not allowed on %s: use %s", r.Method, r.URL.Path, allow))
	case http.StatusNotFound:
		writeError(w, errorf(http.StatusNotFound, "no endpoint %s %s: the API lives under /v1 (see coordinator/README.md, \"The HTTP API\")", r.Method, r.URL.Path))
	default:
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
	}
}

// recorder captures what the mux's fallback handlers write.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }

// metrics are the API's own request metrics.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "atom_api_requests_total",
			Help: "HTTP API requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "atom_api_request_duration_seconds",
			Help:    "HTTP API request latency by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	return m
}

// register registers c, or returns the collector already registered under
// its name (a second API on the same registry shares the metrics).
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic("api: register metrics: " + err.Error()) // a name clash is a programming error
	}
	return c
}
