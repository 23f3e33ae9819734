package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevClusterParses(t *testing.T) {
	c, err := DevCluster()
	require.NoError(t, err)
	require.Len(t, c.Nodes, 8)
	require.Len(t, c.Pools, 1)
}
