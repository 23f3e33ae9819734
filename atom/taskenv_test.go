package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTaskEnvExpanded: the variables packed in ATOM_TASK_ENV (the
// Kubernetes backend's) reach the job one by one, over the image's, and
// the packed one does not; an unreadable one fails with exit 2 before the
// job starts.
func TestTaskEnvExpanded(t *testing.T) {
	t.Parallel()
	packed := `{"ATOM_JOB_KIND":"command","ATOM_REPLICA":"3","REDIS_PORT":"6380","ATOM_JOB_SPEC":"{\"name\":\"a b\"}"}`
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_TASK_ENV=" + packed, "REDIS_PORT=1", "USER_VAR=kept"},
		"run", "--", "sh", "-c", `echo "$ATOM_REPLICA $REDIS_PORT $USER_VAR $ATOM_JOB_SPEC [${ATOM_TASK_ENV-unset}]"`))
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "3 6380 kept {\"name\":\"a b\"} [unset]\n", out)

	code, out = exitCode(t, atomCmd(t, []string{`ATOM_TASK_ENV={"ATOM_REPLICA":3}`}, "run", "--", "echo", "ran"))
	assert.Equal(t, 2, code)
	assert.Equal(t, "atom: ATOM_TASK_ENV is not a JSON object of variable names to string values: json: cannot unmarshal number into Go value of type string\n", out)
}
