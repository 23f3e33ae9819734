package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// Accelerator types are case-sensitive, so a node whose type differs only
// in case from another node's is refused, naming the spelling in use:
// a100 beside A100 would be a second type that jobs and quotas naming A100
// never get (and it would make gpu/a100 and a100 look known to them).
// A job or quota naming the type in another case is refused with the
// spelling meant.
func TestTypesDifferingOnlyInCaseAreRefused(t *testing.T) {
	e := apitest.NewEnv(t, "")
	admin, u1 := e.Tokens["admin"], e.Tokens["u1"]

	code, body := do(t, e, admin, "PUT", "/v1/nodes/g3", `{name: g3, cpu: 96, memory: 768Gi, accelerators: {type: a100, count: 8}}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.JSONEq(t, `{"error": "node g3: accelerator type \"a100\" differs only in case from node g1's A100: types are case-sensitive, so jobs and quotas naming one would never get the other: write A100"}`, body)
	_, ok := nodeCluster(e, "g3")
	assert.False(t, ok, "nothing was made")

	code, body = do(t, e, admin, "PUT", "/v1/quotas/user:u2", `{scope: "user:u2", limits: {gpu/a100: 4}}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `did you mean gpu/A100? (types are case-sensitive)`)

	code, body = do(t, e, u1, "POST", "/v1/jobs", `{kind: command, name: a, command: [true], resources: {accelerators: {type: a100, count: 1}}}`)
	assert.GreaterOrEqual(t, code, 400, body)
	assert.Contains(t, body, `unknown accelerator type \"a100\": this cluster has A100; did you mean A100? (types are case-sensitive)`)

	code, body = do(t, e, admin, "PUT", "/v1/nodes/g3", `{name: g3, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(t, e, admin, "PUT", "/v1/nodes/e1", `{name: e1, cpu: 8, memory: 16Gi, devices: {jetson: 1}}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(t, e, admin, "PUT", "/v1/nodes/e2", `{name: e2, cpu: 8, memory: 16Gi, devices: {Jetson: 1}}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `node e2: device type \"Jetson\" differs only in case from node e1's jetson`)
}
