package rsh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// transport dials launch servers: a bounded dial and TCP keep-alives to
// notice a dead peer, but no bound on the answer or the stream. The
// server sends its header as soon as the command has started and the
// stream lasts as long as the command (an orted lasts the whole MPI
// job), so a wait for either is no sign of a dead server.
var transport = &http.Transport{
	DialContext:        (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
	DisableCompression: true,
}

// SetHeaderTimeout bounds the wait for a launch server's answer, from the
// request sent to the header received, to d; 0 (the default) does not.
// Call it before any launch.
func SetHeaderTimeout(d time.Duration) { transport.ResponseHeaderTimeout = d }

// Run runs argv on the launch server at endpoint (host:port) with token,
// copying its output to stdout and stderr as it comes, and returns its
// exit status. An error means no status came back: the request was
// refused, or the connection failed or was lost.
func Run(ctx context.Context, endpoint, token string, argv []string, stdout, stderr io.Writer) (int, error) {
	return Launch(ctx, endpoint, token, Request{Argv: argv}, stdout, stderr)
}

// Launch is Run with a whole request (environment, directory).
func Launch(ctx context.Context, endpoint, token string, req Request, stdout, stderr io.Writer) (int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	resp, err := send(ctx, endpoint, token, body)
	if err != nil {
		return 0, fmt.Errorf("launch on %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("launch on %s: %s", endpoint, errorBody(resp))
	}
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		return 0, fmt.Errorf("launch on %s: the answer is %q, not an atom rsh stream: is this atom's launch server?", endpoint, ct)
	}
	buf := make([]byte, 32<<10)
	for {
		kind, p, err := readFrame(resp.Body, buf)
		if err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("launch on %s: %w", endpoint, ctx.Err())
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the connection closed before the command's exit status came")
			}
			return 0, fmt.Errorf("launch on %s: %w", endpoint, err)
		}
		switch kind {
		case FrameStdout:
			_, _ = stdout.Write(p)
		case FrameStderr:
			_, _ = stderr.Write(p)
		case FrameExit:
			var e Exit
			if err := json.Unmarshal(p, &e); err != nil {
				return 0, fmt.Errorf("launch on %s: bad exit frame %q: %w", endpoint, p, err)
			}
			return e.ExitCode, nil
		default:
			return 0, fmt.Errorf("launch on %s: unknown frame kind %d", endpoint, kind)
		}
	}
}

// errorBody is a refused request's message.
func errorBody(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return fmt.Sprintf("%d %s", resp.StatusCode, e.Error)
	}
	return fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
}

// RefusedWindow is how long a launch keeps trying a peer that refuses the
// connection: a peer listed Running (its container started) may not have
// its launch server listening yet. A refused connection delivered
// nothing, so trying again cannot run the command twice.
const RefusedWindow = 30 * time.Second

// refused, when set (by tests), is told of each refused try before the
// next.
var refused func(endpoint string)

// send posts body to endpoint's launch server and returns its answer,
// trying again while the connection is refused, for RefusedWindow or
// until ctx's deadline, whichever comes first.
func send(ctx context.Context, endpoint, token string, body []byte) (*http.Response, error) {
	deadline := time.Now().Add(RefusedWindow)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	delay := 50 * time.Millisecond
	for {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+endpoint+LaunchPath, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Authorization", "Bearer "+token)
		hr.Header.Set("Content-Type", "application/json")
		resp, err := transport.RoundTrip(hr)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().Add(delay).After(deadline) {
			return resp, err
		}
		if refused != nil {
			refused(endpoint)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
