package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	return v
}

func TestSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	u1 := e.Tokens["u1"]

	status, body := do(t, e, u1, "POST", "/v1/jobs", lowSpec, "Idempotency-Key", "r1")
	require.Equal(t, http.StatusCreated, status, body)
	first := decode[wire.SubmitResponse](t, body)
	assert.Equal(t, structs.JobID("batch-00001"), first.JobID)
	assert.False(t, first.Existing)
	assert.Equal(t, "r1", first.RequestID)
	require.NotNil(t, first.Job)
	assert.Equal(t, structs.JobPending, first.Job.State)
	assert.Equal(t, structs.UserID("u1"), first.Job.Owner, "the owner is the token's user")
	assert.Equal(t, apitest.T0, first.Job.SubmitTime, "the time comes from the API's clock")

	// The retry after a lost reply: same job, no second one.
	status, body = do(t, e, u1, "POST", "/v1/jobs", lowSpec, "Idempotency-Key", "r1")
	require.Equal(t, http.StatusOK, status, body)
	again := decode[wire.SubmitResponse](t, body)
	assert.Equal(t, first.JobID, again.JobID)
	assert.True(t, again.Existing)
	// The query parameter is the same request ID.
	status, body = do(t, e, u1, "POST", "/v1/jobs?requestID=r1", lowSpec)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, first.JobID, decode[wire.SubmitResponse](t, body).JobID)

	// Request IDs are per user: another user's r1 is another job.
	status, body = do(t, e, e.Tokens["u2"], "POST", "/v1/jobs", lowSpec, "Idempotency-Key", "r1")
	require.Equal(t, http.StatusCreated, status, body)
	assert.NotEqual(t, first.JobID, decode[wire.SubmitResponse](t, body).JobID)

	var jobs int
	e.Store.Read(func(st *state.State) { jobs = len(st.Jobs) })
	assert.Equal(t, 2, jobs)
}

// When the store cannot tell whether a command applied, the API answers
// 503 and says to retry with the same request ID (C22).
func TestUnknownOutcomeAsksForRetry(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	before := e.Store.StateJSON(t)
	e.Store.FailWith(fmt.Errorf("apply JobSubmit: %w", errors.New("leadership lost while committing log")))
	status, body := do(t, e, e.Tokens["u1"], "POST", "/v1/jobs", lowSpec, "Idempotency-Key", "r7")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	msg := errMsg(t, body)
	assert.Contains(t, msg, "leadership lost")
	assert.Contains(t, msg, "outcome is unknown")
	assert.Contains(t, msg, "retry with the same request ID (Idempotency-Key: r7)")
	assert.Equal(t, before, e.Store.StateJSON(t))

	status, body = do(t, e, e.Tokens["admin"], "PUT", "/v1/clusters/local", `{name: local}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, errMsg(t, body), "retry")

	// Once the store works again, the retry creates the job once.
	e.Store.FailWith(nil)
	status, _ = do(t, e, e.Tokens["u1"], "POST", "/v1/jobs", lowSpec, "Idempotency-Key", "r7")
	assert.Equal(t, http.StatusCreated, status)
}

// Allocation tokens never appear in any GET response, nor in errors.
func TestTokensNeverLeak(t *testing.T) {
	t.Parallel()
	e, tasks := matrixEnv(t)
	submit(t, e, "u1", "low-1", lowSpec)
	e.Store.Schedule(t, apitest.T0)
	tokens := e.Store.Tokens()
	require.Len(t, tokens, 3)
	alloc := tokens[tasks[0].ID]

	var bodies []string
	get := func(token, path string) {
		status, body := do(t, e, token, "GET", path, "")
		require.Less(t, status, 500, path)
		bodies = append(bodies, body)
	}
	for _, user := range []structs.UserID{"u1", "m1", "u2", "admin"} {
		for _, path := range []string{
			"/v1/jobs", "/v1/jobs/web-1", "/v1/jobs/web-1/why", "/v1/jobs/low-1", "/v1/jobs/low-1/why",
			"/v1/quotas", "/v1/quotas/user:u1", "/v1/pools", "/v1/pools/perception", "/v1/nodes", "/v1/nodes/g1",
			"/v1/clusters", "/v1/clusters/local", "/metrics", "/v1/tasks/" + string(tasks[0].ID) + "/peers",
		} {
			get(e.Tokens[user], path)
		}
	}
	get(alloc, "/v1/tasks/"+string(tasks[0].ID)+"/peers")
	get(alloc, "/v1/jobs/web-1")
	status, body := do(t, e, alloc, "POST", "/v1/tasks/"+string(tasks[0].ID)+"/heartbeat", `{"state": "Running"}`)
	require.Equal(t, http.StatusOK, status, body)
	bodies = append(bodies, body)
	_, body = do(t, e, alloc, "POST", "/v1/tasks/"+string(tasks[1].ID)+"/heartbeat", `{"state": "Running"}`)
	bodies = append(bodies, body)
	for _, b := range bodies {
		for id, tok := range tokens {
			require.NotContains(t, b, tok, "token of %s", id)
		}
		for _, tok := range e.Tokens {
			require.NotContains(t, b, tok, "user token")
		}
	}
}

func TestHeartbeatAndPeers(t *testing.T) {
	t.Parallel()
	e, tasks := matrixEnv(t)
	tok0, tok1 := e.Store.Tokens()[tasks[0].ID], e.Store.Tokens()[tasks[1].ID]
	hb := func(tok string, task structs.TaskID, body string) (int, string) {
		return do(t, e, tok, "POST", "/v1/tasks/"+string(task)+"/heartbeat", body)
	}
	status, body := hb(tok0, tasks[0].ID, `{}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.HeartbeatResponse{Task: tasks[0].ID, State: structs.TaskScheduled}, decode[wire.HeartbeatResponse](t, body), "a plain heartbeat changes nothing")

	status, body = hb(tok0, tasks[0].ID, `{"state": "Running"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.TaskRunning, decode[wire.HeartbeatResponse](t, body).State)
	status, _ = hb(tok1, tasks[1].ID, `{"state": "Running", "healthy": true}`)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, structs.JobRunning, e.Store.Job("web-1").State)
	assert.Equal(t, apitest.T0, e.Store.Tasks("web-1")[0].StartedAt, "the API's clock, not the agent's")

	status, body = do(t, e, tok1, "GET", "/v1/tasks/"+string(tasks[0].ID)+"/peers", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.PeerList{Job: "web-1", Peers: []wire.Peer{
		{Task: tasks[0].ID, Index: 0, Node: "g1", State: structs.TaskRunning},
		{Task: tasks[1].ID, Index: 1, Node: "g1", State: structs.TaskRunning},
	}}, decode[wire.PeerList](t, body))

	// Cancel: the heartbeat answer tells atom to stop.
	status, _ = do(t, e, e.Tokens["u1"], "POST", "/v1/jobs/web-1/cancel", "")
	require.Equal(t, http.StatusOK, status)
	status, body = do(t, e, e.Tokens["u1"], "POST", "/v1/jobs/web-1/cancel", "")
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, "job web-1 is already cancelled and its tasks are stopping (each gets its stop grace, then SIGKILL): there is nothing more to cancel",
		errMsg(t, body), "cancelled twice while its tasks stop")
	status, body = hb(tok0, tasks[0].ID, `{"state": "Running"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.HeartbeatResponse{Task: tasks[0].ID, State: structs.TaskStopping, StopReason: structs.StopCancelled}, decode[wire.HeartbeatResponse](t, body))
	status, _ = hb(tok0, tasks[0].ID, `{"state": "Failed", "exitCode": 143}`)
	require.Equal(t, http.StatusOK, status)
	status, body = hb(tok0, tasks[0].ID, `{"state": "Running"}`)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, errMsg(t, body), "has ended (Stopped): stop it", "cancelled: stopped, not failed")

	// Another job's token is not good for this job's tasks.
	submit(t, e, "u2", "other-1", `{kind: command, command: [true], name: other, priority: low, resources: {cpu: "1"}}`)
	e.Store.Schedule(t, apitest.T0)
	otherTok := e.Store.Tokens()["other-1-0-a0"]
	require.NotEmpty(t, otherTok)
	status, _ = do(t, e, otherTok, "GET", "/v1/tasks/"+string(tasks[1].ID)+"/peers", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = hb(otherTok, tasks[1].ID, `{}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = hb(otherTok, "no-such-task", `{}`)
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestWhy(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "ib-1", `{kind: command, command: [true], name: ib, priority: low, selector: fabric=ib, resources: {accelerators: {type: A100, count: 1}}}`)
	status, body := do(t, e, e.Tokens["u1"], "GET", "/v1/jobs/ib-1/why", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, wire.WhyResponse{Job: "ib-1", State: structs.JobPending, Pending: true,
		Message: "pending: the scheduler has not looked at this job yet",
		Queue: &sched.QueuePlace{Place: 1, Of: 1, Priority: structs.PriorityLow, Pool: structs.PublicPool, Scope: "user:u1",
			Standing: sched.Standing{Weight: 1, Share: 1}}}, decode[wire.WhyResponse](t, body))

	e.Store.Schedule(t, apitest.T0)
	status, body = do(t, e, e.Tokens["u1"], "GET", "/v1/jobs/ib-1/why", "")
	require.Equal(t, http.StatusOK, status)
	w := decode[wire.WhyResponse](t, body)
	assert.True(t, w.Pending)
	require.NotNil(t, w.Why)
	assert.Contains(t, w.Message, "not matching selector fabric=ib")
	assert.Equal(t, w.Why.Message, w.Message)

	submit(t, e, "u1", "ok-1", lowSpec)
	e.Store.Schedule(t, apitest.T0)
	status, body = do(t, e, e.Tokens["u1"], "GET", "/v1/jobs/ok-1/why", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, wire.WhyResponse{Job: "ok-1", State: structs.JobScheduled, Message: "not pending: the job is Scheduled"}, decode[wire.WhyResponse](t, body))
}

func TestJobStatusAndAdminRoundTrips(t *testing.T) {
	t.Parallel()
	e, tasks := matrixEnv(t)
	status, body := do(t, e, e.Tokens["m1"], "GET", "/v1/jobs/web-1", "")
	require.Equal(t, http.StatusOK, status)
	js := decode[wire.JobStatus](t, body)
	assert.Equal(t, structs.JobID("web-1"), js.Job.ID)
	assert.Equal(t, tasks, js.Tasks)

	status, body = do(t, e, e.Tokens["u1"], "POST", "/v1/jobs/web-1/scale", `{"replicas": 3}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, 3, decode[wire.JobStatus](t, body).Job.Replicas)

	admin := e.Tokens["admin"]
	status, body = do(t, e, admin, "PUT", "/v1/quotas/user:u2", "scope: user:u2\nlimits: {cpu: 8, gpu/A100: 2}\n")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, wire.QuotaStatus{Scope: "user:u2", Limits: structs.ResourceList{"cpu": 8000, "gpu/A100": 2}, Usage: structs.ResourceList{},
		FairShare: sched.Standing{Weight: 1, Share: 0.5}}, decode[wire.QuotaStatus](t, body), "one scope with jobs competes; u2 is counted with it")
	status, body = do(t, e, e.Tokens["u2"], "GET", "/v1/quotas/user:u2", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, int64(2), decode[wire.QuotaStatus](t, body).Limits["gpu/A100"])
	status, body = do(t, e, e.Tokens["u2"], "GET", "/v1/quotas", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []structs.Scope{"user:u2"}, scopes(decode[wire.QuotaList](t, body)))
	status, body = do(t, e, e.Tokens["m1"], "GET", "/v1/quotas", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []structs.Scope{"project:perception"}, scopes(decode[wire.QuotaList](t, body)))

	status, body = do(t, e, admin, "PUT", "/v1/pools/vision", `{"name": "vision", "project": "vision", "members": ["u2"]}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.Pool{Name: "vision", Project: "vision", Members: []structs.UserID{"u2"}}, decode[structs.Pool](t, body))
	status, body = do(t, e, admin, "PUT", "/v1/nodes/v1", "name: v1\npool: vision\ncpu: 8\nmemory: 32Gi\n")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.PoolID("vision"), decode[wire.NodeStatus](t, body).Pool)
	e.Store.Schedule(t, apitest.T0) // the third replica
	status, body = do(t, e, admin, "GET", "/v1/nodes/g1", "")
	require.Equal(t, http.StatusOK, status)
	g1 := decode[wire.NodeStatus](t, body)
	assert.Equal(t, 3, g1.Tasks)
	assert.Equal(t, int64(3), g1.Allocated.Accels)
	status, body = do(t, e, admin, "PUT", "/v1/clusters/remote", "name: remote\nbackend: kubernetes\nredis: 10.0.0.1:6379\n")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.Cluster{Name: "remote", Backend: "kubernetes", Redis: "10.0.0.1:6379"}, decode[structs.Cluster](t, body))
	status, body = do(t, e, admin, "GET", "/v1/clusters", "")
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, decode[wire.ClusterList](t, body).Clusters, 2)

	status, _ = do(t, e, admin, "DELETE", "/v1/nodes/v1", "")
	assert.Equal(t, http.StatusNoContent, status)
	status, _ = do(t, e, admin, "DELETE", "/v1/pools/vision", "")
	assert.Equal(t, http.StatusNoContent, status)
	status, _ = do(t, e, admin, "GET", "/v1/pools/vision", "")
	assert.Equal(t, http.StatusNotFound, status)
}

func scopes(l wire.QuotaList) []structs.Scope {
	var out []structs.Scope
	for _, q := range l.Quotas {
		out = append(out, q.Scope)
	}
	return out
}

func TestUnknownRoutesAnswerJSON(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	status, body := do(t, e, e.Tokens["u1"], "DELETE", "/v1/jobs", "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Contains(t, errMsg(t, body), "method DELETE is not allowed on /v1/jobs: use GET, HEAD, POST")
	status, body = do(t, e, e.Tokens["u1"], "GET", "/v2/jobs", "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, errMsg(t, body), "no endpoint GET /v2/jobs")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	do(t, e, e.Tokens["u1"], "GET", "/v1/jobs", "")
	status, body := do(t, e, e.Tokens["u1"], "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `atom_api_requests_total{code="200",route="GET /v1/jobs"} 1`)
}

func TestParseTokens(t *testing.T) {
	t.Parallel()
	good := "users:\n- {name: alice, token: 0123456789abcdef0, admin: true}\n- {name: bob, token: fedcba98765432100}\n"
	f, err := api.ParseTokens([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, api.TokenFile{Users: []api.User{
		{Name: "alice", Token: "0123456789abcdef0", Admin: true}, {Name: "bob", Token: "fedcba98765432100"},
	}}, f)

	for name, tc := range map[string]struct{ file, msg string }{
		"short token":    {"users: [{name: a, token: secret-short}]", "at least 16"},
		"token spaces":   {"users: [{name: a, token: \"secret secret secret\"}]", "without spaces"},
		"same token":     {"users: [{name: a, token: secret-secret-secret}, {name: b, token: secret-secret-secret}]", "another user has the same token"},
		"same name":      {"users: [{name: a, token: secret-secret-secret1}, {name: a, token: secret-secret-secret2}]", "each user appears once"},
		"bad name":       {"users: [{name: \"a b\", token: secret-secret-secret}]", "users[0].name"},
		"unknown field":  {"users: [{name: a, token: secret-secret-secret, role: admin}]", "users[0].role is not a known field"},
		"YAML 1.1 yes":   {"users: [{name: a, token: secret-secret-secret, admin: yes}]", "users[0].admin"},
		"YAML 1.1 on":    {"users: [{name: a, token: secret-secret-secret, admin: on}]", "users[0].admin"},
		"wrong type":     {"users: [{name: a, token: secret-secret-secret, admin: sometimes}]", "parse tokens file"},
		"not UTF-8":      {"users: [{name: a, token: \"secret-secret-\xff\"}]", "UTF-8"},
		"top-level list": {"- {name: a, token: secret-secret-secret}", "parse tokens file"},
		// It read "user is not a known field: use users: use users: [...]".
		"user, not users": {"user: [{name: a, token: secret-secret-secret}]", "parse tokens file: user is not a known field (did you mean users?): use users (a tokens file is users: [{name, token, admin}])"},
	} {
		_, err := api.ParseTokens([]byte(tc.file))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.msg, name)
		assert.NotContains(t, err.Error(), "secret-", "%s: messages never quote a token", name)
	}
}

// The handler accepts fsm.Response results as well as unwrapped ones.
func TestFSMResponseResults(t *testing.T) {
	t.Parallel()
	s := &responseStore{Store: apitest.NewStore()}
	s.Load(t, apitest.Cluster)
	h := api.New(s, api.Config{Tokens: api.TokenFile{Users: []api.User{{Name: "u1", Token: "u1-token-0123456789"}}}})
	e := &apitest.Env{Store: s.Store}
	e.Server = newServer(t, h)
	status, body := do(t, e, "u1-token-0123456789", "POST", "/v1/jobs", lowSpec)
	require.Equal(t, http.StatusCreated, status, body)
	assert.True(t, strings.HasPrefix(string(decode[wire.SubmitResponse](t, body).JobID), "batch-"), "DefaultNewID")
	status, body = do(t, e, "u1-token-0123456789", "POST", "/v1/jobs", `{kind: command, command: [true], name: big, resources: {accelerators: {type: A100, count: 9}}}`)
	assert.Equal(t, http.StatusUnprocessableEntity, status, body)
}

// responseStore returns the state machine's fsm.Response from Apply, as a
// server handing back raft.ApplyFuture.Response() would.
type responseStore struct{ *apitest.Store }

func (s *responseStore) Apply(ctx context.Context, c state.Command) (any, error) {
	res, err := s.Store.Apply(ctx, c)
	return fsm.Response{Result: res, Err: err}, nil
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestDefaultNewID(t *testing.T) {
	t.Parallel()
	id := api.DefaultNewID("train")
	assert.Regexp(t, `^train-[a-z0-9]{5}$`, id)
	long := api.DefaultNewID(strings.Repeat("a", 56) + "-" + "bcdefg")
	assert.LessOrEqual(t, len(long), 63)
	assert.NoError(t, structs.ValidateObjectName("id", long))
}
