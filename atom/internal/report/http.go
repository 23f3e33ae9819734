package report

import (
	"net/http"
	"time"
)

// httpClient bounds each request, so a coordinator that accepts
// connections but never answers costs one beat, not the loop.
var httpClient = http.Client{Timeout: 10 * time.Second}
