package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// A spec body that holds no spec gets one answer, whatever it holds
// (nothing, whitespace, comments, a byte-order mark, document markers),
// naming what to send: a body of comments used to get "job spec is empty"
// where an empty one got "request body is empty". A null document says
// it is null. Nothing changes.
func TestEmptySpecBodies(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	before := e.Store.StateJSON(t)
	endpoints := []struct{ method, path, wanted, null string }{
		{"POST", "/v1/jobs", "a job spec in YAML or JSON, a mapping of fields such as kind, name, command and resources",
			"job spec is null (the document is ~): write a mapping of fields such as kind, name, command and resources"},
		{"PUT", "/v1/quotas/user:u1", "a quota spec in YAML or JSON, a mapping of fields such as scope, limits and weight",
			"quota spec is null (the document is ~): write a mapping of fields such as scope, limits and weight"},
		{"PUT", "/v1/pools/vision", "a pool spec in YAML or JSON, a mapping of fields such as name, project, members, lendIdle, maxPreemptNotice and minRuntime",
			"pool spec is null (the document is ~): write a mapping of fields such as name, project, members, lendIdle, maxPreemptNotice and minRuntime"},
		{"PUT", "/v1/nodes/n1", "a node spec in YAML or JSON, a mapping of fields such as name, cpu, memory and accelerators",
			"node spec is null (the document is ~): write a mapping of fields such as name, cpu, memory and accelerators"},
		{"PUT", "/v1/clusters/remote", "a cluster spec in YAML or JSON, a mapping of fields such as name, backend and redis",
			"cluster spec is null (the document is ~): write a mapping of fields such as name, backend and redis"},
	}
	for _, ep := range endpoints {
		for _, body := range []string{"", " \n\t", "# nothing yet\n", "\ufeff", "\ufeff# kind: command\n", "---\n...\n"} {
			status, resp := do(t, e, e.Tokens["admin"], ep.method, ep.path, body)
			assert.Equal(t, http.StatusBadRequest, status, "%s %s %q", ep.method, ep.path, body)
			assert.Equal(t, "request body is empty: send "+ep.wanted, errMsg(t, resp), "%s %s %q", ep.method, ep.path, body)
		}
		status, resp := do(t, e, e.Tokens["admin"], ep.method, ep.path, "~\n")
		assert.Equal(t, http.StatusBadRequest, status, "%s %s", ep.method, ep.path)
		assert.Equal(t, ep.null, errMsg(t, resp), "%s %s", ep.method, ep.path)
	}
	assert.Equal(t, before, e.Store.StateJSON(t), "nothing changed")
}

// A cluster spec ending with --- is one spec, as every other spec; a
// second document is refused as before.
func TestClusterSpecTrailingSeparator(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	status, resp := do(t, e, e.Tokens["admin"], "PUT", "/v1/clusters/remote", "name: remote\n---\n")
	assert.Equal(t, http.StatusOK, status, resp)
	status, resp = do(t, e, e.Tokens["admin"], "PUT", "/v1/clusters/remote", "name: remote\n---\nname: other\n")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "cluster spec holds several YAML documents (a second starts at line 2): the spec must be a single document", errMsg(t, resp))
}
