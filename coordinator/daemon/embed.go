package daemon

import (
	_ "embed"

	"github.com/atom-sched/atom/pkg/structs"
)

//go:embed devcluster.yaml
var devCluster []byte

// DevCluster returns the embedded local cluster of `coordinator dev`.
func DevCluster() (*structs.ClusterConfig, error) { return structs.ParseClusterConfig(devCluster) }
