// Package client is the Go client of the coordinator's HTTP API (/v1),
// used by the coordinator CLI, tests and the atom agent. Its bodies are
// the types of pkg/wire; it imports neither Raft nor the API
// server.
//
// Failed requests return an *Error carrying the HTTP status and the
// server's message; errors.Is matches it against ErrNotFound,
// ErrConflict, ... by status. A request answered 503 (no leader, outcome
// unknown) or not answered at all is retried with backoff, unchanged: a
// job submission keeps its request ID, so a retry after a lost reply
// returns the job the first attempt created instead of making a second.
package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/wire"
)

// Client calls one coordinator. Its fields may be changed before first use.
type Client struct {
	addr  string // base URL without a trailing slash
	token string // user token

	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Retries is how often a request answered 503, or not answered, is
	// sent again (default 6, about 6 s of backoff in all).
	Retries int
	// Backoff returns the wait before retry n (from 1); the default
	// doubles from 100 ms up to 2 s, with jitter.
	Backoff func(n int) time.Duration
	// Timeout bounds one call, its retries included (0: none), so a
	// coordinator that accepts connections but never answers (paused,
	// overloaded) fails the call instead of hanging it. Logs is not
	// bounded: it streams.
	Timeout time.Duration
}

// New returns a client of the coordinator at addr ("http://host:7070";
// a bare host:port means http) that authenticates with token.
func New(addr, token string) *Client {
	addr = strings.TrimRight(strings.TrimSpace(addr), "/")
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &Client{addr: addr, token: token, Retries: 6, Backoff: DefaultBackoff}
}

// Addr returns the coordinator's base URL.
func (c *Client) Addr() string { return c.addr }

// DefaultBackoff doubles from 100 ms up to 2 s, with ±20% jitter.
func DefaultBackoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(max(n-1, 0), 5)
	d = min(d, 2*time.Second)
	return d + time.Duration((mrand.Float64()*0.4-0.2)*float64(d))
}

// NewRequestID returns a random request ID for a job submission.
func NewRequestID() string {
	b := make([]byte, 16)
	if _, err := crand.Read(b); err != nil {
		panic("client: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// Error is a request the coordinator refused (or could not serve).
type Error struct {
	Status  int    // HTTP status
	Message string // the server's message
	// Quota is set when a quota limit refused the request (409).
	Quota *sched.QuotaShortfall
	// Why is set when the job can never fit (422).
	Why *sched.Why
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("coordinator answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

// Sentinels matched by errors.Is against an *Error's status.
var (
	ErrBadRequest    = errors.New("bad request")             // 400
	ErrUnauthorized  = errors.New("unauthorized")            // 401
	ErrForbidden     = errors.New("forbidden")               // 403
	ErrNotFound      = errors.New("not found")               // 404
	ErrConflict      = errors.New("conflict")                // 409: exists, ended, in use, over quota
	ErrUnsatisfiable = errors.New("unsatisfiable")           // 422
	ErrUnavailable   = errors.New("coordinator unavailable") // 503 after the retries
)

var statusErrs = map[int]error{
	http.StatusBadRequest: ErrBadRequest, http.StatusUnauthorized: ErrUnauthorized,
	http.StatusForbidden: ErrForbidden, http.StatusNotFound: ErrNotFound,
	http.StatusConflict: ErrConflict, http.StatusUnprocessableEntity: ErrUnsatisfiable,
	http.StatusServiceUnavailable: ErrUnavailable,
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool { return statusErrs[e.Status] == target }

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	token        string // overrides the client's token (allocation tokens)
	body         []byte
	out          any // decoded from a 2xx JSON answer
}

// do sends r, retrying 503s and unanswered requests with backoff.
func (c *Client) do(ctx context.Context, r request) (err error) {
	if c.Timeout > 0 {
		outer := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
		defer func() {
			if ctx.Err() != nil && outer.Err() == nil {
				err = fmt.Errorf("coordinator %s did not answer %s %s within %s (raise it with --timeout): %w", c.addr, r.method, r.path, c.Timeout, err)
			}
		}()
	}
	for attempt := 0; ; attempt++ {
		err = c.once(ctx, r)
		var ae *Error
		retry := err != nil && ctx.Err() == nil && !errors.Is(err, ErrUntrustedCertificate) &&
			((errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable) || !errors.As(err, &ae))
		if !retry || attempt >= c.Retries {
			return err
		}
		wait := time.Duration(0)
		if c.Backoff != nil {
			wait = c.Backoff(attempt + 1)
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
}

func (c *Client) once(ctx context.Context, r request) error {
	u := c.addr + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	tok := c.token
	if r.token != "" {
		tok = r.token
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		if err := certError(c.addr, err); errors.Is(err, ErrUntrustedCertificate) {
			return err
		}
		return fmt.Errorf("coordinator %s did not answer %s %s: %w", c.addr, r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 300 {
		var we wire.Error
		if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(string(data), "Client sent an HTTP request to an HTTPS server") {
			return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("coordinator %s serves HTTPS: use an https:// address (and --tls-ca or $%s for its CA)", c.addr, EnvTLSCA)}
		}
		if json.Unmarshal(data, &we) != nil || we.Error == "" {
			we.Error = strings.TrimSpace(string(data))
			if len(we.Error) > 200 {
				we.Error = we.Error[:200] + "..."
			}
		}
		return &Error{Status: resp.StatusCode, Message: we.Error, Quota: we.Quota, Why: we.Why}
	}
	if r.out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, r.out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// jsonBody marshals v for a request.
func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("client: encode request: " + err.Error()) // the wire types always encode
	}
	return b
}

// seg escapes a path segment.
func seg(s string) string { return url.PathEscape(s) }
