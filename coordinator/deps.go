//go:build tools

// Package coordinator pins the libraries the coordinator's server, API and
// CLI are built on (the tools.go pattern), until their code imports them.
package coordinator

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/urfave/cli/v2"
)
