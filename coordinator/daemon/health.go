package daemon

import (
	"net/http"

	"github.com/atom-sched/atom/coordinator/server"
)

// Probe paths, open without a token (Kubernetes' probes carry none).
const (
	// PathHealthz answers 200 while the process serves HTTP: the
	// liveness probe.
	PathHealthz = "/healthz"
	// PathReadyz answers 200 once this server knows a Raft leader (it can
	// take writes, forwarding them), 503 before: the readiness probe.
	PathReadyz = "/readyz"
)

func probes(mux *http.ServeMux, srv *server.Server) {
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if id, _ := srv.Leader(); id == "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("no raft leader known\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
