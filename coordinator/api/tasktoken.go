package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// PodTokens reviews the service-account tokens that task Pods of
// kubernetes clusters exchange for their allocation tokens.
//
// ReviewPodToken checks that jwt is a token bound to the Pod of task t's
// allocation whose token is allocToken, in t's cluster. It returns the
// environment of t's atom (its Pod carries only what atom needs to ask
// for it) when it is; a
// *StatusError (401: not a valid token for audience atom; 403: valid but
// not that Pod's) when it is not; any other error when it cannot tell now
// (the API answers 503: retry).
type PodTokens interface {
	ReviewPodToken(ctx context.Context, t *structs.Task, allocToken, jwt string) (env map[string]string, err error)
}

// Bounds of the token exchange: its body (a JWT is a few kB) and how many
// exchanges a server takes per second (each costs the cluster's API server
// a TokenReview), with the burst of a large job's Pods starting at once.
const (
	maxTokenBody       = 16 << 10
	tokenExchangeRate  = 200
	tokenExchangeBurst = 1000
)

func newTokenLimiter() *rate.Limiter { return rate.NewLimiter(tokenExchangeRate, tokenExchangeBurst) }

// taskToken: POST /v1/tasks/{id}/token with the service-account token of
// task id's Pod: answers the task's allocation token, with its atom's
// environment (PodTokens), when the cluster's
// API server vouches (TokenReview) that the token is bound to the Pod of
// the task's current allocation and the task is live, once per
// allocation (the answer is committed; a second exchange gets 409). Any
// server that drives the cluster answers.
func (s *server) taskToken(w http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	id := structs.TaskID(r.PathValue("id"))
	if s.podTokens == nil {
		return 0, nil, errorf(http.StatusNotFound, "this coordinator drives no kubernetes cluster: only task Pods exchange a service-account token; other tasks get ATOM_TOKEN")
	}
	if !s.tokenLimit.Allow() {
		w.Header().Set("Retry-After", "1")
		return 0, nil, errorf(http.StatusTooManyRequests, "too many token exchanges at once (over %d/s): retry in a second", tokenExchangeRate)
	}
	if r.ContentLength > maxTokenBody {
		return 0, nil, errorf(http.StatusBadRequest, "request body is %d bytes: send a token exchange of at most %d bytes", r.ContentLength, maxTokenBody)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenBody)
	var req wire.TaskTokenRequest
	if err := decodeJSON(r, &req, "a token exchange"); err != nil {
		return 0, nil, err
	}
	if n := req.Nonce; n != "" && (len(n) < 32 || len(n) > 128 || strings.Trim(n, "0123456789abcdef") != "") {
		return 0, nil, &structs.FieldError{Field: "nonce", Msg: "is not allowed: use 32 to 128 lowercase hex characters, or leave it out"}
	}
	if req.ServiceAccountToken == "" {
		return 0, nil, errorf(http.StatusUnauthorized, "no serviceAccountToken in the body: send the token of the task's Pod (the file ATOM_TOKEN_FILE names)")
	}
	t, tok, err := s.liveTask(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	env, err := s.podTokens.ReviewPodToken(ctx, t, tok, req.ServiceAccountToken)
	if err != nil {
		return 0, nil, err
	}
	// Once per allocation (state.TokenIssue): the job, which can read the
	// Pod's token file too, must not get what atom keeps from it.
	if _, err := s.apply(r.Context(), &state.TokenIssue{Task: id, Nonce: nonceHash(req.Nonce)}); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.TaskToken{Task: id, Token: tok, Env: env}, nil
}

// liveTask returns task id, which must hold resources, and its allocation
// token; a server whose state lags catches up before it says the task is
// not known.
func (s *server) liveTask(ctx context.Context, id structs.TaskID) (*structs.Task, string, error) {
	read := func() (t *structs.Task, tok string) {
		s.store.Read(func(st *state.State) {
			if t = st.Tasks[id]; t != nil {
				tok = st.Tokens[id]
			}
		})
		return t, tok
	}
	t, tok := read()
	if l, ok := s.store.(Lagging); ok && (t == nil || tok == "") {
		if err := l.CatchUp(ctx); err != nil {
			return nil, "", errorf(http.StatusServiceUnavailable, "task %s is not known to this server, which cannot catch up now (%v): retry", trunc(string(id)), err)
		}
		t, tok = read()
	}
	switch {
	case t == nil || tok == "":
		return nil, "", errorf(http.StatusForbidden, "task %s is not known: a Pod gets the token of its own live task only", trunc(string(id)))
	case !t.State.HoldsResources():
		return nil, "", errorf(http.StatusForbidden, "task %s has ended (%s): its Pod gets no token", id, t.State)
	}
	return t, tok, nil
}

// nonceHash is what the state keeps of an exchange's nonce.
func nonceHash(n string) string {
	if n == "" {
		return ""
	}
	h := sha256.Sum256([]byte(n))
	return hex.EncodeToString(h[:])
}
