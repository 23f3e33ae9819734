package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/atom-sched/atom/pkg/client"
)

// trustCoordinatorCA makes every HTTP request of this process trust the
// CA in ATOM_TLS_CA (PEM text, as backends set it, or a PEM file), besides
// the system's roots, so atom reaches a coordinator that serves HTTPS:
// heartbeats, reports, peer lookups, and the built-in job types, which
// atom serves in processes of its own that run this too.
func trustCoordinatorCA() error {
	ca := os.Getenv(client.EnvTLSCA)
	if ca == "" {
		return nil
	}
	cfg, err := client.TLSConfig(ca)
	if err != nil {
		return fmt.Errorf("%s: %w", client.EnvTLSCA, err)
	}
	http.DefaultTransport.(*http.Transport).TLSClientConfig = cfg
	return nil
}
