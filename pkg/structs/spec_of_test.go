package structs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specYAML is the YAML of the spec of the job spec makes.
func specYAML(t *testing.T, spec string, status func(*Job)) string {
	t.Helper()
	s, err := ParseJobSpec([]byte(spec))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	if status != nil {
		status(j)
	}
	b, err := j.Spec().YAML()
	require.NoError(t, err)
	return string(b)
}

// A job's spec is what its user wrote, in a spec's order and spelling,
// whatever the job has been through: none of its status (state, attempts,
// times, quota held, back-off), no default filled in, resources in a
// spec's units, not the job's millicores and bytes.
func TestSpecIsWhatTheUserWrote(t *testing.T) {
	const spec = `kind: command
name: flaky
priority: low
command:
  - sh
  - -c
  - exit 3
resources:
  cpu: 500m
  memory: 1Gi
restartPolicy: OnFailure
scratch:
  size: 10Gi
`
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	assert.Equal(t, spec, specYAML(t, spec, func(j *Job) {
		j.ID, j.State, j.Reason, j.Attempt, j.Interrupted = "flaky-1", JobPending, "restarting: replica 0 failed with exit code 3", 3, 1
		j.SubmitTime, j.PendingSince, j.FirstStartedAt, j.BackoffUntil = t0, t0.Add(time.Minute), t0, t0.Add(2*time.Minute)
		j.ChargedScope, j.Charged = "user:u1", ResourceList{"cpu": 500, "memory": 1 << 30}
	}))
}

// Where two spellings make the same job the spec shows one: a spark
// driver of whole GiB of heap as spark.driver, else as resources; a
// config of a project not the job's own as PROJECT/NAME (the coordinator
// resolved each name to its owner at submit).
func TestSpecSpellings(t *testing.T) {
	const driver = `kind: spark
name: clean
spark:
  mainApplicationFile: local:///opt/clean.py
  driver:
    cores: 2
    memory: 4Gi
`
	assert.Equal(t, driver, specYAML(t, driver, nil))
	const resources = `kind: spark
name: clean
resources:
  cpu: "2"
  memory: 4Gi
spark:
  mainApplicationFile: local:///opt/clean.py
`
	assert.Equal(t, resources, specYAML(t, resources, nil))

	const configs = `kind: command
name: train
project: perception
command:
  - "true"
resources:
  cpu: "1"
configs:
  - config: train
    mountPath: /etc/train
  - secret: other/wandb
    env: true
  - config: mine
    mountPath: /etc/mine
`
	assert.Equal(t, configs, specYAML(t, configs, func(j *Job) {
		j.Configs[0].Owner = ProjectScope("perception")
		j.Configs[1].Owner, j.Configs[1].Secret = ProjectScope("other"), "wandb"
		j.Configs[2].Owner = UserScope("u1")
	}))
}
