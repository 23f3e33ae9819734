package ui

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/atom-sched/atom/pkg/wire"
)

// response is an in-process API response.
type response struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (r *response) Header() http.Header { return r.header }
func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *response) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// message is an API error body's message.
func (r *response) message() string {
	var e wire.Error
	if json.Unmarshal(r.body.Bytes(), &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(r.body.String())
}

// decode reads a 200 body into out.
func (r *response) decode(out any) error { return json.Unmarshal(r.body.Bytes(), out) }

// apiRequest is an API request as user u, made from the dashboard's
// request r (its context: a browser that leaves cancels it).
func apiRequest(r *http.Request, u *session, method, path string, body io.Reader) *http.Request {
	req, err := http.NewRequestWithContext(r.Context(), method, path, body)
	if err != nil {
		panic("ui: API request " + method + " " + path + ": " + err.Error()) // paths are built here, escaped
	}
	req.Header.Set("Authorization", "Bearer "+u.user.Token)
	req.RemoteAddr, req.Host, req.TLS = r.RemoteAddr, r.Host, r.TLS
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// call makes an API request as u and returns the whole response.
func (s *server) call(r *http.Request, u *session, method, path string, body []byte) *response {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	resp := &response{header: http.Header{}}
	s.api.ServeHTTP(resp, apiRequest(r, u, method, path, rd))
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	return resp
}

// textErrors passes a streamed API response through to the browser, but
// turns an error's JSON body into plain text (the script shows it).
type textErrors struct {
	http.ResponseWriter
	status int
	errBuf bytes.Buffer
}

func (t *textErrors) WriteHeader(status int) {
	if t.status != 0 {
		return
	}
	t.status = status
	if status < 400 {
		t.ResponseWriter.WriteHeader(status)
	}
}

func (t *textErrors) Write(b []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	if t.status >= 400 {
		return t.errBuf.Write(b)
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap lets the API flush the browser's connection as it follows.
func (t *textErrors) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// finish writes a held-back error as text.
func (t *textErrors) finish() {
	if t.status < 400 {
		return
	}
	r := &response{body: t.errBuf}
	t.ResponseWriter.Header().Set("Content-Type", "text/plain; charset=utf-8")
	t.ResponseWriter.WriteHeader(t.status)
	_, _ = io.WriteString(t.ResponseWriter, r.message()+"\n")
}
