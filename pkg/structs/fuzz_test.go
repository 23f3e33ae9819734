package structs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseJobSpec feeds arbitrary bytes to ParseJobSpec and ToJob. Nothing
// may panic; what is accepted must be a sane job that survives a JSON round
// trip unchanged, and whose Spec makes the same job again. Seeds live in
// testdata/fuzz/FuzzParseJobSpec.
func FuzzParseJobSpec(f *testing.F) {
	f.Add([]byte("kind: command\nname: x\nresources: {cpu: 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseJobSpec(data)
		if err != nil {
			return
		}
		j, err := s.ToJob("u1")
		require.NoError(t, err, "ParseJobSpec accepted what ToJob refuses")
		checkJobInvariants(t, j)

		b, err := json.Marshal(s)
		require.NoError(t, err)
		s2, err := ParseJobSpec(b)
		require.NoError(t, err, "round trip of %s", b)
		j2, err := s2.ToJob("u1")
		require.NoError(t, err)
		assert.Equal(t, j, j2, "round trip of %s", b)

		// The job's spec, as the dashboard shows it, makes the same job.
		b, err = j.Spec().YAML()
		require.NoError(t, err)
		s3, err := ParseJobSpec(b)
		require.NoError(t, err, "the job's spec %s", b)
		j3, err := s3.ToJob("u1")
		require.NoError(t, err, "the job's spec %s", b)
		assert.Equal(t, j, j3, "the job's spec %s", b)
	})
}

// checkJobInvariants asserts what every accepted job satisfies.
func checkJobInvariants(t *testing.T, j *Job) {
	t.Helper()
	require.NoError(t, ValidateObjectName("name", j.Name))
	require.NoError(t, ValidateObjectName("kind", string(j.Kind)))
	require.GreaterOrEqual(t, j.Replicas, 1)
	require.LessOrEqual(t, j.Replicas, MaxReplicas)
	require.GreaterOrEqual(t, j.MinAvailable, 0)
	require.LessOrEqual(t, j.MinAvailable, j.Replicas)
	require.Positive(t, j.PendingTimeout)
	require.GreaterOrEqual(t, j.DowngradeAfter, Duration(0))
	require.Less(t, j.DowngradeAfter, j.PendingTimeout)
	require.GreaterOrEqual(t, j.MaxPreemptions, 0)
	require.Equal(t, j.Kind == KindSpark, j.Spark != nil, "spark jobs, and only they, have a spark section")
	if j.Spark != nil {
		require.NoError(t, j.Spark.Check())
	}
	for i := 0; i < j.NumShapes(); i++ {
		sh := j.ShapeAt(i)
		r := sh.Resources
		require.GreaterOrEqual(t, sh.Replicas, 1, "shape %d", i)
		require.False(t, r.IsZero(), "shape %d asks for nothing", i)
		require.GreaterOrEqual(t, r.MilliCPU, int64(0))
		require.GreaterOrEqual(t, r.Memory, int64(0))
		require.GreaterOrEqual(t, r.Accels, int64(0))
		require.LessOrEqual(t, r.Accels, int64(MaxAccelsPerNode))
		require.False(t, r.Accels > 0 && len(r.Devices) > 0, "accelerators and devices together")
		for _, c := range r.Devices {
			require.Positive(t, c)
		}
		for k, v := range Charge(sh) {
			require.NoError(t, ValidResourceKey(k))
			require.GreaterOrEqual(t, v, int64(0), "shape %d charges %s=%d", i, k, v)
		}
	}
}
