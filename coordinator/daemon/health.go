package daemon

import (
	"context"
	"net/http"
	"time"
)

// Probe paths, open without a token (Kubernetes' probes carry none).
const (
	// PathHealthz answers 200 while the process serves HTTP: the
	// liveness probe.
	PathHealthz = "/healthz"
	// PathReadyz answers 200 once this server takes requests as it will
	// for good: a Raft leader is known, the cluster config this server
	// seeds a new cluster with is in, and the server has caught up with
	// the leader since it started (a follower has what the leader had
	// applied, the config included); 503 before, saying which. The
	// readiness probe, and what scripts wait for before they submit.
	PathReadyz = "/readyz"
)

// readyWait bounds how long one /readyz waits for this server to catch
// up (a probe's default timeout is a second).
const readyWait = 900 * time.Millisecond

func probes(mux *http.ServeMux, fw *forwarder, fresh *freshReads) {
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		notReady := func(why string) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(why + "\n"))
		}
		if id, _ := fw.srv.Leader(); id == "" {
			notReady("no raft leader known")
			return
		}
		if fw.seeding.Load() {
			notReady("applying the cluster config")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), readyWait)
		defer cancel()
		if err := fresh.catchUp(r.WithContext(ctx)); err != nil {
			notReady("not caught up with the leader: " + err.Error())
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
