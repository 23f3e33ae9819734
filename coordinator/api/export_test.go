package api

import "net/http"

// Routes returns the method and path patterns of an API handler from New,
// for tests that must cover every endpoint.
func Routes(h http.Handler) []string { return append([]string(nil), h.(*server).served...) }
