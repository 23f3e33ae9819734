package daemon

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Servers talk to each other over the same HTTP listener as the API, on
// paths under /internal/v1/, authenticated by a secret every server of the
// cluster shares (never a user or allocation token).
const (
	pathApply = "/internal/v1/apply"
	pathWhy   = "/internal/v1/why/"
	pathWarm  = "/internal/v1/warmups/"
	pathJoin  = "/internal/v1/join"
	pathIndex = "/internal/v1/index"
)

// forwarder is the api.Store over a server: writes that reach a follower
// are forwarded to the leader, as are why-pending lookups (the reasons
// live in the leader's memory).
type forwarder struct {
	srv    *server.Server
	peers  map[string]string // server ID -> HTTP base URL
	secret string
	client *http.Client
	// logClient streams logs from the other servers (no overall timeout).
	logClient *http.Client
	// mtls: servers talk over mutual TLS, and the /internal/ endpoints
	// also want a client certificate the cluster's CA signed.
	mtls bool
	// seeding: this server is applying the cluster config it started a
	// new cluster with; it tells no follower its index until that is in
	// (so none is ready, or answers reads, before the config is there).
	seeding atomic.Bool
}

func (f *forwarder) Read(fn func(*state.State)) { f.srv.Read(fn) }

func (f *forwarder) Heartbeat(id structs.TaskID, token string, ev structs.TaskEvent) error {
	return f.srv.Heartbeat(id, token, ev)
}

var _ api.Lagging = (*forwarder)(nil)

// Lagging reports whether this server's state may lag the cluster's: it
// does not lead, or leads but has not caught up yet (api.Lagging).
func (f *forwarder) Lagging() bool { return !f.srv.Authoritative() }

// catchUpWait bounds how long CatchUp waits for this server to apply what
// the leader has.
const catchUpWait = 2 * time.Second

// CatchUp asks the leader for its applied index and waits until this
// server has applied as much; on the leader it confirms with a quorum
// that it still leads (api.Lagging).
func (f *forwarder) CatchUp(ctx context.Context) error {
	if f.srv.Authoritative() {
		return f.srv.VerifyLeader(ctx)
	}
	lid, _ := f.srv.Leader()
	url, ok := f.peers[lid]
	if lid == "" || !ok {
		return errors.New("no leader is known")
	}
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+pathIndex, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.secret)
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("ask leader %s for its index: %w", lid, err)
	}
	defer resp.Body.Close()
	var out struct{ Index uint64 }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&out) != nil {
		return fmt.Errorf("ask leader %s for its index: %s", lid, resp.Status)
	}
	for {
		var have uint64
		f.srv.Read(func(st *state.State) { have = st.Index })
		if have >= out.Index {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("applied index %d, the leader's %d: %w", have, out.Index, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Apply commits c on this server if it leads, else on the leader.
func (f *forwarder) Apply(ctx context.Context, c state.Command) (any, error) {
	res, err := f.srv.Apply(ctx, c)
	var nl *server.NotLeaderError
	if !errors.As(err, &nl) {
		return res, err
	}
	url, ok := f.peers[nl.LeaderID]
	if !ok || nl.LeaderID == "" {
		return nil, err // no leader known: 503, retry
	}
	body, encErr := state.Encode(c)
	if encErr != nil {
		return nil, encErr
	}
	var out applyReply
	if err := f.post(ctx, url+pathApply, body, &out); err != nil {
		return nil, fmt.Errorf("forward to leader %s: %w", nl.LeaderID, err)
	}
	f.catchUp(ctx, out.Index)
	return out.decode(c)
}

// catchUp waits (briefly) until this server has applied index, so a read
// right after a forwarded write sees it (read-your-writes on followers).
func (f *forwarder) catchUp(ctx context.Context, index uint64) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var have uint64
		f.srv.Read(func(st *state.State) { have = st.Index })
		if have >= index {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// WarmUps returns the progress of job id's cache warm-ups, which the
// leader runs: a follower asks it (and shows the committed warm-ups
// without progress if it cannot).
func (f *forwarder) WarmUps(id structs.JobID) []structs.WarmUpStatus {
	if f.srv.IsLeader() {
		return f.srv.WarmUps(id)
	}
	var out []structs.WarmUpStatus
	f.askLeader(pathWarm+string(id), &out)
	return out
}

// Why asks the leader for its reasons.
func (f *forwarder) Why(id structs.JobID) *sched.Why {
	if f.srv.IsLeader() {
		return f.srv.Why(id)
	}
	var w *sched.Why
	if !f.askLeader(pathWhy+string(id), &w) {
		return nil
	}
	return w
}

// askLeader GETs path from the leader into out; false if it could not.
func (f *forwarder) askLeader(path string, out any) bool {
	lid, _ := f.srv.Leader()
	url, ok := f.peers[lid]
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+f.secret)
	resp, err := f.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(out) == nil
}

func (f *forwarder) post(ctx context.Context, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.secret)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// applyReply carries a command's result and domain error between servers.
type applyReply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Err    *wireError      `json:"error,omitempty"`
	Index  uint64          `json:"index"` // the leader's applied index after the command
}

// wireError is a domain error with the kind the API maps to a status.
type wireError struct {
	Kind  string                `json:"kind"` // notFound, exists, invalid, quota, unsatisfiable, notAllowed, other
	Msg   string                `json:"msg"`
	Quota *sched.QuotaShortfall `json:"quota,omitempty"`
	Why   *sched.Why            `json:"why,omitempty"`
}

// remoteError is a domain error that happened on the leader.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func toWire(err error) *wireError {
	w := &wireError{Kind: "other", Msg: err.Error()}
	var qe *sched.QuotaError
	var ue *sched.UnsatisfiableError
	switch {
	case errors.As(err, &qe):
		w.Kind, w.Quota = "quota", &qe.QuotaShortfall
	case errors.As(err, &ue):
		w.Kind, w.Why = "unsatisfiable", ue.Why
	case errors.Is(err, sched.ErrUnsatisfiable):
		w.Kind = "unsatisfiable"
	case errors.Is(err, sched.ErrNotAllowed):
		w.Kind = "notAllowed"
	case errors.Is(err, state.ErrNotFound):
		w.Kind = "notFound"
	case errors.Is(err, state.ErrExists):
		w.Kind = "exists"
	case errors.Is(err, state.ErrInvalid):
		w.Kind = "invalid"
	}
	return w
}

func (w *wireError) err() error {
	switch w.Kind {
	case "quota":
		if w.Quota != nil {
			return &sched.QuotaError{QuotaShortfall: *w.Quota}
		}
		return &remoteError{w.Msg, sched.ErrQuotaExceeded}
	case "unsatisfiable":
		if w.Why != nil {
			return &sched.UnsatisfiableError{Why: w.Why}
		}
		return &remoteError{w.Msg, sched.ErrUnsatisfiable}
	case "notAllowed":
		return &remoteError{w.Msg, sched.ErrNotAllowed}
	case "notFound":
		return &remoteError{w.Msg, state.ErrNotFound}
	case "exists":
		return &remoteError{w.Msg, state.ErrExists}
	case "invalid":
		return &remoteError{w.Msg, state.ErrInvalid}
	}
	return errors.New(w.Msg) // the API answers 503: outcome unknown
}

// decode turns the reply into c's result type and error.
func (r *applyReply) decode(c state.Command) (any, error) {
	if r.Err != nil {
		return nil, r.Err.err()
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return nil, nil
	}
	var v any
	switch c.(type) {
	case *state.JobSubmit:
		v = &state.SubmitResult{}
	case *state.PlanCommit:
		v = &state.CommitResult{}
	case *state.JobsExpire:
		v = &state.ExpireResult{}
	case *state.NodeRelease:
		v = &state.ReleaseResult{}
	case *state.ConfigPut:
		v = &state.ConfigPutResult{}
	case *state.SecretRekey:
		v = &state.RekeyResult{}
	case *state.ServiceRestart:
		v = &state.RestartResult{}
	default:
		return nil, nil
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		return nil, fmt.Errorf("decode leader reply: %w", err)
	}
	switch x := v.(type) {
	case *state.SubmitResult:
		return *x, nil
	case *state.CommitResult:
		return *x, nil
	case *state.ExpireResult:
		return *x, nil
	case *state.ReleaseResult:
		return *x, nil
	case *state.ConfigPutResult:
		return *x, nil
	case *state.RekeyResult:
		return *x, nil
	case *state.RestartResult:
		return *x, nil
	}
	return nil, nil
}

// auth admits only the other servers (the shared secret).
func (f *forwarder) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if f.secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+f.secret)) != 1 {
			http.Error(w, `{"error":"this endpoint is for coordinator servers only: the shared secret sent does not match this cluster's: give every server the same --secret (or $ATOM_CLUSTER_SECRET)"}`, http.StatusUnauthorized)
			return
		}
		if f.mtls && !fromPeer(r) {
			http.Error(w, `{"error":"this endpoint is for coordinator servers only: present a certificate signed by the cluster's CA"}`, http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// internal serves the server-to-server endpoints.
func (f *forwarder) internal(mux *http.ServeMux) {
	auth := f.auth
	mux.HandleFunc("POST "+pathApply, auth(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c, err := state.Decode(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := f.srv.Apply(r.Context(), c)
		var reply applyReply
		f.srv.Read(func(st *state.State) { reply.Index = st.Index })
		if err != nil {
			var nl *server.NotLeaderError
			if errors.As(err, &nl) || errors.Is(err, server.ErrOutcomeUnknown) {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			reply.Err = toWire(err)
		} else if res != nil {
			reply.Result, _ = json.Marshal(res)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	mux.HandleFunc("GET "+pathIndex, auth(func(w http.ResponseWriter, r *http.Request) {
		if !f.srv.Authoritative() {
			http.Error(w, `{"error":"not the leader, or not caught up yet"}`, http.StatusServiceUnavailable)
			return
		}
		if f.seeding.Load() {
			http.Error(w, `{"error":"the leader is applying the cluster config"}`, http.StatusServiceUnavailable)
			return
		}
		var out struct{ Index uint64 }
		f.srv.Read(func(st *state.State) { out.Index = st.Index })
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	mux.HandleFunc("GET "+pathWhy+"{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f.srv.Why(structs.JobID(r.PathValue("id"))))
	}))
	mux.HandleFunc("GET "+pathWarm+"{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f.srv.WarmUps(structs.JobID(r.PathValue("id"))))
	}))
	mux.HandleFunc("POST "+pathJoin, auth(f.serveJoin))
}
