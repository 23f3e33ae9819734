package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// authKind says who may call an endpoint.
type authKind int

const (
	authUser  authKind = iota // any user token
	authAdmin                 // an admin's user token
	authTask                  // an allocation token, checked by the handler
)

// handler serves one endpoint. It returns the status and body to write as
// JSON, or an error (an *httpError, or a Store error classified by
// writeError). A handler that wrote the response itself returns status 0.
type handler func(w http.ResponseWriter, r *http.Request, c caller) (int, any, error)

// handle registers h for pattern behind the auth check.
func (s *server) handle(pattern string, auth authKind, h handler) {
	s.served = append(s.served, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		s.serve(sw, r, auth, h)
		if s.metrics != nil {
			if sw.status == 0 {
				sw.status = http.StatusOK
			}
			s.metrics.requests.WithLabelValues(pattern, fmt.Sprint(sw.status)).Inc()
			s.metrics.duration.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
		}
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, auth authKind, h handler) {
	var c caller
	if auth != authTask {
		var err error
		if c, err = s.authenticate(r); err != nil {
			writeError(w, err)
			return
		}
		if auth == authAdmin && !c.admin {
			writeError(w, errorf(http.StatusForbidden, "%s %s is for admins: user %s is not one", r.Method, r.URL.Path, c.user))
			return
		}
	}
	status, body, err := h(w, r, c)
	switch {
	case err != nil:
		writeError(w, err)
	case status != 0:
		writeJSON(w, status, body)
	}
}

// statusWriter remembers the status written, for metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// httpError is an error with the status to answer it with.
type httpError struct {
	status int
	msg    string
	quota  *sched.QuotaShortfall
	why    *sched.Why
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *httpError {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// apply commits c and unwraps an fsm.Response into its result and domain
// error.
func (s *server) apply(ctx context.Context, c state.Command) (any, error) {
	res, err := s.store.Apply(ctx, c)
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case fsm.Response:
		return r.Result, r.Err
	case *fsm.Response:
		if r != nil {
			return r.Result, r.Err
		}
	}
	return res, nil
}

// classify maps an error to its status and body. Domain errors (those of
// coordinator/state and pkg/sched, and spec FieldErrors) map by their
// sentinels and types. Any other Store error means the command was not
// applied or its outcome is unknown (not the leader, leadership lost,
// timeouts): 503, retry (a submission with the same request ID).
func classify(err error) (int, wire.Error) {
	body := wire.Error{Error: err.Error()}
	var he *httpError
	var se *StatusError
	var fe *structs.FieldError
	var qe *sched.QuotaError
	var ue *sched.UnsatisfiableError
	switch {
	case errors.As(err, &he):
		body.Quota, body.Why = he.quota, he.why
		return he.status, body
	case errors.As(err, &se) && se.Status >= 400 && se.Status < 500:
		return se.Status, body
	case errors.As(err, &fe):
		return http.StatusBadRequest, body
	case errors.As(err, &qe):
		q := qe.QuotaShortfall
		body.Quota = &q
		return http.StatusConflict, body
	case errors.Is(err, sched.ErrQuotaExceeded):
		return http.StatusConflict, body
	case errors.As(err, &ue):
		body.Why = ue.Why
		return http.StatusUnprocessableEntity, body
	case errors.Is(err, sched.ErrUnsatisfiable):
		return http.StatusUnprocessableEntity, body
	case errors.Is(err, sched.ErrNotAllowed):
		return http.StatusForbidden, body
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound, body
	case errors.Is(err, state.ErrExists):
		return http.StatusConflict, body
	case errors.Is(err, state.ErrInvalid):
		return http.StatusBadRequest, body
	}
	if !strings.Contains(body.Error, "retry") {
		body.Error += ": the outcome is unknown: retry the request (a job submission with the same request ID)"
	}
	return http.StatusServiceUnavailable, body
}

// conflictIfInvalid turns state.ErrInvalid into a 409: for deletes and
// cancels it means the object is in a state that does not allow it.
func conflictIfInvalid(err error) error {
	if err != nil && errors.Is(err, state.ErrInvalid) {
		return errorf(http.StatusConflict, "%v", err)
	}
	return err
}

func writeError(w http.ResponseWriter, err error) {
	status, body := classify(err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="atom"`)
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages say <name>, not \u003cname\u003e
	if err := enc.Encode(body); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(wire.Error{Error: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
