// Command coordinator is atom's control plane: `coordinator server` and
// `coordinator dev` run it, and the other commands (job, service, quota,
// pool, node, cluster) talk to one over its HTTP API. See coordinator/cli.
package main

import (
	"os"

	"github.com/atom-sched/atom/coordinator/cli"
)

func main() { os.Exit(cli.Main(os.Args)) }
