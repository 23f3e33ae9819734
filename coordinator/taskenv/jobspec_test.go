package taskenv_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// A spark driver reads its job from ATOM_JOB_SPEC: the tolerations and
// volumes its executor Pods get are there; its env is not.
func TestJobSpecCarriesWhatExecutorsGet(t *testing.T) {
	s, err := structs.ParseJobSpec([]byte(`kind: spark
name: clean
env: {SECRETISH: "1"}
resources: {cpu: 1, memory: 2Gi}
tolerations: [{key: spot, operator: Exists, effect: NoExecute}]
volumes: [{name: points, claim: lidar-points, mountPath: /data, readOnly: true}]
spark: {mainApplicationFile: /app.py}
`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	b, err := json.Marshal(taskenv.JobSpec(j))
	require.NoError(t, err)
	var got structs.Job
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, j.Tolerations, got.Tolerations)
	assert.Equal(t, j.Volumes, got.Volumes)
	assert.Equal(t, j.Spark, got.Spark)
	assert.Empty(t, got.Env)
}
