package structs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Durations read as a spec writes them, in JSON and YAML, and the
// nanosecond numbers of older coordinators still read.
func TestDurationJSON(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute:               `"30m"`,
		time.Hour:                      `"1h"`,
		90 * time.Minute:               `"1h30m"`,
		90 * time.Second:               `"1m30s"`,
		time.Hour + time.Second:        `"1h0m1s"`,
		1500 * time.Millisecond:        `"1.5s"`,
		0:                              `"0s"`,
		168 * time.Hour:                `"168h"`,
		10*time.Minute + 5*time.Second: `"10m5s"`,
	} {
		b, err := json.Marshal(Duration(d))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), d.String())
		var back Duration
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, d, back.D())
	}
	j := &Job{Name: "x", PendingTimeout: Duration(DefaultPendingTimeout), DowngradeAfter: Duration(10 * time.Minute),
		MPI: &MPIOptions{StartTimeout: Duration(5 * time.Minute)}}
	b, err := json.Marshal(j)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"downgradeAfter":"10m","pendingTimeout":"30m"`)
	assert.Contains(t, string(b), `"startTimeout":"5m"`)
	y, err := yaml.Marshal(j)
	require.NoError(t, err)
	assert.Contains(t, string(y), "pendingTimeout: 30m\n")

	var old Job
	require.NoError(t, json.Unmarshal([]byte(`{"pendingTimeout": 1800000000000, "mpi": {"startTimeout": 60000000000}}`), &old))
	assert.Equal(t, DefaultPendingTimeout, old.PendingTimeout.D(), "a number is nanoseconds, as older coordinators wrote")
	assert.Equal(t, time.Minute, old.MPI.StartTimeout.D())
	err = json.Unmarshal([]byte(`{"pendingTimeout": "soon"}`), &old)
	assert.ErrorContains(t, err, `duration "soon": use Go's form such as 90s, 30m or 1h30m`)
}
