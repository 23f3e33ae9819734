package lidar_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/test/spark/lidar"
)

// The seed's cloud: 3,000,000 points in 4 files, 2,700,311 of them kept.
func TestWritePoints(t *testing.T) {
	keep, err := lidar.WritePoints(t.TempDir(), 3_000_000, 4)
	require.NoError(t, err)
	assert.Equal(t, 2_700_311, keep.Points)
	_, err = lidar.ReadCleaned(t.TempDir())
	assert.ErrorContains(t, err, "no part-*.parquet in ")
}
