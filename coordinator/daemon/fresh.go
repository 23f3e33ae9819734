package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
)

// freshReads holds the API's reads back on a server that has not caught
// up with the cluster since it started. A restarted server's state is its
// last snapshot (or empty) until the leader's first contact commits the
// rest of its log, so it listed no jobs and no quota to a user who asked
// it first (found by a new user restarting a follower). Until it has
// caught up once (a follower with the leader's applied index, a leader
// once it is authoritative), a GET waits for that (at most catchUpWait)
// or is answered 503, which clients retry; afterwards reads are answered
// from the server's own state as before. Writes and heartbeats are not
// held: they go to the leader or catch up by themselves; nor are requests
// without a token, which the API refuses (401) as before.
type freshReads struct {
	f    *forwarder
	next http.Handler
	done atomic.Bool
}

func (h *freshReads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("Authorization") != "" && !h.done.Load() {
		if err := h.catchUp(r); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			msg := fmt.Sprintf("server %s has not caught up with the cluster since it started (%v): retry, or ask another server", h.f.srv.ID(), err)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

func (h *freshReads) catchUp(r *http.Request) error {
	if !h.f.Lagging() { // an authoritative leader
		h.done.Store(true)
		return nil
	}
	if err := h.f.CatchUp(r.Context()); err != nil {
		return err
	}
	h.done.Store(true)
	return nil
}
