package report

import (
	"net/http"
	"time"
)

// Bounds on one report's request.
const (
	minRequestTimeout = time.Second
	maxRequestTimeout = 10 * time.Second
)

// httpClientFor returns the client of a reporter heartbeating every
// period. Each request is bounded by one period (at least a second, at
// most 10 s), so a coordinator that accepts connections but does not
// answer (a paused or overloaded server) costs one beat, and the next
// server gets the beat after it well within the heartbeat TTL (three
// periods). With a fixed 10 s bound, a beat sent to a server paused for a
// few seconds outlived the TTL and the leader declared a healthy task
// lost (found by make chaos).
func httpClientFor(every time.Duration) *http.Client {
	return &http.Client{Timeout: min(max(every, minRequestTimeout), maxRequestTimeout)}
}
