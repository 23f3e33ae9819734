package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTaskEnvRoundTrip(t *testing.T) {
	env := map[string]string{"ATOM_TASK_ID": "j-0-ab12", "ATOM_JOB_SPEC": `{"name":"x y","command":["a=b"]}`, "REDIS_PORT": "6379", "ATOM_EMPTY": ""}
	s, err := EncodeTaskEnv(env)
	require.NoError(t, err)
	assert.Equal(t, `{"ATOM_EMPTY":"","ATOM_JOB_SPEC":"{\"name\":\"x y\",\"command\":[\"a=b\"]}","ATOM_TASK_ID":"j-0-ab12","REDIS_PORT":"6379"}`, s)
	got, err := DecodeTaskEnv(s)
	require.NoError(t, err)
	assert.Equal(t, env, got)
}

func TestTaskEnvRefusesBadEntries(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{`[1]`, "ATOM_TASK_ENV is not a JSON object of variable names to string values"},
		{`{"A":1}`, "ATOM_TASK_ENV is not a JSON object of variable names to string values"},
		{`{"A=B":"x"}`, `ATOM_TASK_ENV: variable name "A=B": a name must be non-empty, without '=' or NUL`},
		{`{"":"x"}`, `ATOM_TASK_ENV: variable name "": a name must be non-empty`},
		{`{"A":"x\u0000"}`, "ATOM_TASK_ENV: variable A: a value may not hold NUL"},
		{`{"ATOM_TASK_ENV":"{}"}`, "ATOM_TASK_ENV: variable ATOM_TASK_ENV may not name itself"},
	} {
		_, err := DecodeTaskEnv(tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.err, tc.in)
	}
	_, err := EncodeTaskEnv(map[string]string{"A\x00": "x"})
	require.ErrorContains(t, err, `variable name "A\x00"`)
}
