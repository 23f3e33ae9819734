package ui

import "net/http"

// Routes returns the method and path patterns of a dashboard from New,
// for tests that must cover every route.
func Routes(h http.Handler) []string { return append([]string(nil), h.(*server).served...) }
