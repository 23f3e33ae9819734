package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// do sends one request and returns the status and body. hdr lists header
// names and values.
func do(t *testing.T, e *apitest.Env, token, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode >= 400 {
		var e wire.Error
		require.NoError(t, json.Unmarshal(b, &e), "error bodies are JSON: %s", b)
		require.NotEmpty(t, e.Error, "error bodies say what went wrong")
	}
	return resp.StatusCode, string(b)
}

// errMsg returns an error body's message ("" for other bodies).
func errMsg(t *testing.T, body string) string {
	t.Helper()
	var e wire.Error
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error
}

// submit submits spec as owner straight through the store (no API) and
// returns the job's ID.
func submit(t *testing.T, e *apitest.Env, owner structs.UserID, id, spec string) structs.JobID {
	t.Helper()
	s, err := structs.ParseJobSpec([]byte(spec))
	require.NoError(t, err)
	j, err := s.ToJob(owner)
	require.NoError(t, err)
	j.ID = structs.JobID(id)
	e.Store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	return j.ID
}

const (
	webSpec = `{kind: service, command: [true], name: web, project: perception, replicas: 2, minAvailable: 1, resources: {accelerators: {type: A100, count: 1}}}`
	lowSpec = `{kind: command, name: batch, priority: low, command: [sleep, "1"], resources: {cpu: "1", memory: 1Gi}}`
)

// matrixEnv is the access matrix's fixture: u1's service web-1 in project
// perception, placed (two tasks with allocation tokens); an empty pool
// "spare"; an idle node c2.
func matrixEnv(t *testing.T) (*apitest.Env, []*structs.Task) {
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "web-1", webSpec)
	e.Store.Load(t, `
clusters: [{name: local}]
pools: [{name: spare, project: spare, members: [u2]}]
nodes: [{name: c2, cpu: 8, memory: 16Gi}]`)
	cr := e.Store.Schedule(t, apitest.T0)
	require.Equal(t, []structs.JobID{"web-1"}, cr.Placed)
	tasks := e.Store.Tasks("web-1")
	require.Len(t, tasks, 2)
	return e, tasks
}

// accessEnv is the access matrix's fixture: u1's service web-1 in project
// perception, placed (two live tasks with allocation tokens, and replica
// 1's first task, which failed and was replaced); u1's batch job prep-1,
// placed (one task); an empty pool "spare"; an idle node c2. It returns
// the tasks of web-1 (live replica 0, live replica 1, ended replica 1) and
// prep-1's task.
func accessEnv(t *testing.T) (e *apitest.Env, live0, live1, ended, foreign *structs.Task) {
	e = apitest.NewEnv(t, "")
	submit(t, e, "u1", "web-1", webSpec)
	submit(t, e, "u1", "prep-1", `{kind: command, name: prep, priority: low, command: [sleep, "1"], resources: {cpu: "1"}}`)
	cr := e.Store.Schedule(t, apitest.T0)
	require.ElementsMatch(t, []structs.JobID{"web-1", "prep-1"}, cr.Placed)
	e.Store.Report(t, "web-1-1-a0", structs.TaskFailed, apitest.T0)
	cr = e.Store.Schedule(t, apitest.T0)
	require.Equal(t, []structs.JobID{"web-1"}, cr.Placed, "the failed replica is replaced")
	e.Store.Load(t, `
clusters: [{name: local}]
pools: [{name: spare, project: spare, members: [u2]}]
nodes: [{name: c2, cpu: 8, memory: 16Gi}]`)
	byID := map[structs.TaskID]*structs.Task{}
	for _, j := range []structs.JobID{"web-1", "prep-1"} {
		for _, tk := range e.Store.Tasks(j) {
			byID[tk.ID] = tk
		}
	}
	require.Len(t, byID, 4)
	for _, id := range []structs.ConfigID{{Kind: structs.ConfigKindConfig, Owner: "user:u1", Name: "train"},
		{Kind: structs.ConfigKindConfig, Owner: "project:perception", Name: "ptrain"},
		{Kind: structs.ConfigKindSecret, Owner: "project:perception", Name: "wandb"}} {
		e.PutConfig(t, id, structs.ConfigData{"key": []byte("value")})
	}
	live0, live1, ended, foreign = byID["web-1-0-a0"], byID["web-1-1-a0-r1"], byID["web-1-1-a0"], byID["prep-1-0-a0"]
	require.NotNil(t, live0)
	require.NotNil(t, live1)
	require.NotNil(t, foreign)
	require.Equal(t, structs.TaskFailed, ended.State)
	return e, live0, live1, ended, foreign
}

// The access matrix: every endpoint for every kind of caller.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	type caller string
	const (
		owner, other, member, admin   caller = "owner u1", "other u2", "member m1", "admin"
		alloc, sibling, none, garbage caller = "allocation token", "sibling's allocation token", "no token", "unknown token"
		expired, foreign              caller = "expired token", "foreign token"
	)
	callers := []caller{owner, other, member, admin, alloc, sibling, expired, foreign, none, garbage}
	// task0 and task1 are web-1's live tasks (alloc and sibling hold their
	// tokens); gone is replica 1's first task, which has ended (expired
	// holds its token); foreign holds the token of a task of u1's other
	// job prep-1.
	const task0, task1, gone = "web-1-0-a0", "web-1-1-a0-r1", "web-1-1-a0"
	// users: the expected status for the four users; the token callers
	// get 401 unless listed in tok.
	type row struct {
		method, path, body string
		users              [4]int // owner, other, member, admin
		tok                map[caller]int
	}
	const ok, created, nocontent, unauth, forbidden, notfound, conflict, notimpl = 200, 201, 204, 401, 403, 404, 409, 501
	all := [4]int{ok, ok, ok, ok}
	adminOnly := func(s int) [4]int { return [4]int{forbidden, forbidden, forbidden, s} }
	jobAccess := [4]int{ok, notfound, ok, ok}
	noUsers := [4]int{unauth, unauth, unauth, unauth}
	rows := []row{
		{"POST", "/v1/jobs", lowSpec, [4]int{created, created, created, created}, nil},
		{"GET", "/v1/jobs", "", all, nil},
		{"GET", "/v1/jobs/web-1", "", jobAccess, nil},
		{"GET", "/v1/jobs/web-1/why", "", jobAccess, nil},
		{"GET", "/v1/jobs/web-1/events", "", jobAccess, nil},
		// Everyone may list events: each sees those of the jobs they may see.
		{"GET", "/v1/events", "", all, nil},
		// The test API keeps no logs: past the access check, 501.
		{"GET", "/v1/jobs/web-1/logs", "", [4]int{notimpl, notfound, notimpl, notimpl}, nil},
		{"POST", "/v1/jobs/web-1/cancel", "", jobAccess, nil},
		{"POST", "/v1/jobs/web-1/scale", `{"replicas": 1}`, jobAccess, nil},
		{"GET", "/v1/quotas", "", all, nil},
		{"GET", "/v1/quotas/user:u1", "", [4]int{ok, forbidden, forbidden, ok}, nil},
		{"GET", "/v1/quotas/project:perception", "", [4]int{ok, forbidden, ok, ok}, nil},
		{"PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {gpu/A100: 4}}`, adminOnly(ok), nil},
		{"GET", "/v1/pools", "", all, nil},
		{"GET", "/v1/pools/perception", "", all, nil},
		{"PUT", "/v1/pools/perception", `{name: perception, project: perception, members: [u1]}`, adminOnly(ok), nil},
		{"DELETE", "/v1/pools/spare", "", adminOnly(nocontent), nil},
		{"GET", "/v1/nodes", "", all, nil},
		{"GET", "/v1/nodes/g1", "", all, nil},
		{"PUT", "/v1/nodes/c1", `{name: c1, cpu: 32, memory: 128Gi}`, adminOnly(ok), nil},
		{"DELETE", "/v1/nodes/c2", "", adminOnly(nocontent), nil},
		{"POST", "/v1/nodes/g1/release", `{"accelerators": [0]}`, adminOnly(ok), nil},
		{"GET", "/v1/clusters", "", all, nil},
		{"GET", "/v1/clusters/local", "", all, nil},
		{"PUT", "/v1/clusters/local", `{name: local, backend: local}`, adminOnly(ok), nil},
		// Nodes are in it: refused, past the access check.
		{"DELETE", "/v1/clusters/local", "", adminOnly(conflict), nil},
		// The test API has no kubernetes cluster: past the access check,
		// 422 (volumes live in one).
		{"POST", "/v1/volumes", `{"name": "data", "size": "1Gi"}`, [4]int{422, 422, 422, 422}, nil},
		{"GET", "/v1/volumes", "", [4]int{422, 422, 422, 422}, nil},
		{"DELETE", "/v1/volumes/data", "", [4]int{422, 422, 422, 422}, nil},
		// A task reports with its own token only; a token of an ended task
		// of the same job is refused like a sibling's, another job's like
		// an unknown one.
		{"POST", "/v1/tasks/" + task0 + "/heartbeat", `{"state": "Running"}`, noUsers,
			map[caller]int{alloc: ok, sibling: forbidden, expired: forbidden}},
		// An ended task's own token only learns that it must stop.
		{"POST", "/v1/tasks/" + gone + "/heartbeat", `{"state": "Running"}`, noUsers,
			map[caller]int{alloc: forbidden, sibling: forbidden, expired: conflict}},
		// Peers: live tasks of the job's current attempt only.
		{"GET", "/v1/tasks/" + task0 + "/peers", "", noUsers,
			map[caller]int{alloc: ok, sibling: ok, expired: forbidden}},
		{"GET", "/v1/tasks/" + gone + "/peers", "", noUsers,
			map[caller]int{alloc: forbidden, sibling: forbidden, expired: forbidden}},
		// The token exchange is for task Pods of kubernetes clusters (none
		// here); test/k8s/kubebackend tests it against a real API server.
		{"POST", "/v1/tasks/" + task0 + "/token", `{"serviceAccountToken": "x"}`, [4]int{notfound, notfound, notfound, notfound},
			map[caller]int{alloc: notfound, sibling: notfound, expired: notfound, foreign: notfound, none: notfound, garbage: notfound}},
		{"GET", "/metrics", "", all, nil},
		// Configs and secrets: anyone makes their own; a project's are
		// its members' (and admins'); a secret's values its owner's only.
		{"POST", "/v1/configs", `{"name": "new", "data": {"k": "dg=="}}`, [4]int{created, created, created, created}, nil},
		{"GET", "/v1/configs", "", all, nil},
		{"GET", "/v1/configs/train?user=u1", "", [4]int{ok, forbidden, forbidden, ok}, nil},
		{"GET", "/v1/configs/ptrain?project=perception", "", [4]int{ok, notfound, ok, ok}, nil},
		{"PUT", "/v1/configs/ptrain?project=perception", `{"data": {"k": "dg=="}}`, [4]int{ok, notfound, ok, ok}, nil},
		{"DELETE", "/v1/configs/ptrain?project=perception", "", [4]int{nocontent, notfound, nocontent, nocontent}, nil},
		{"POST", "/v1/secrets", `{"name": "new", "project": "perception", "data": {"k": "dg=="}}`, [4]int{created, forbidden, created, created}, nil},
		{"GET", "/v1/secrets", "", all, nil},
		{"GET", "/v1/secrets/wandb?project=perception", "", [4]int{ok, notfound, ok, ok}, nil},
		{"PUT", "/v1/secrets/wandb?project=perception", `{"data": {"k": "dg=="}}`, [4]int{ok, notfound, ok, ok}, nil},
		{"DELETE", "/v1/secrets/wandb?project=perception", "", [4]int{nocontent, notfound, nocontent, nocontent}, nil},
		{"GET", "/v1/secrets/wandb/data/key?project=perception", "", [4]int{ok, notfound, ok, forbidden}, nil},
		{"POST", "/v1/secrets/rekey", "", adminOnly(ok), nil},
		{"POST", "/v1/jobs/web-1/restart", "", jobAccess, nil},
	}
	t.Run("every endpoint has a row", func(t *testing.T) {
		e := apitest.NewEnv(t, "")
		mux := http.NewServeMux()
		for _, p := range api.Routes(e.Server.Config.Handler) {
			mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
		covered := map[string]bool{}
		for _, r := range rows {
			_, p := mux.Handler(httptest.NewRequest(r.method, r.path, nil))
			require.NotEmpty(t, p, "row %s %s matches no endpoint", r.method, r.path)
			covered[p] = true
		}
		for _, p := range api.Routes(e.Server.Config.Handler) {
			assert.True(t, covered[p], "endpoint %s has no row in the access matrix: add one with every caller's status", p)
		}
	})
	for _, r := range rows {
		for _, c := range callers {
			want := unauth
			switch c {
			case owner:
				want = r.users[0]
			case other:
				want = r.users[1]
			case member:
				want = r.users[2]
			case admin:
				want = r.users[3]
			default:
				if s, ok := r.tok[c]; ok {
					want = s
				}
			}
			t.Run(r.method+" "+r.path+"/"+string(c), func(t *testing.T) {
				t.Parallel()
				e, live0, live1, ended, theirs := accessEnv(t)
				toks := e.Store.Tokens()
				tok := map[caller]string{
					owner: e.Tokens["u1"], other: e.Tokens["u2"], member: e.Tokens["m1"], admin: e.Tokens["admin"],
					alloc: toks[live0.ID], sibling: toks[live1.ID], expired: toks[ended.ID], foreign: toks[theirs.ID],
					garbage: apitest.NewToken(),
				}[c]
				require.Equal(t, structs.TaskID(task1), live1.ID)
				before := e.Store.StateJSON(t)
				status, body := do(t, e, tok, r.method, r.path, r.body)
				assert.Equal(t, want, status, body)
				if status >= 400 {
					assert.Equal(t, before, e.Store.StateJSON(t), "a refused request changes nothing")
				}
			})
		}
	}
}

// Users see their own jobs and their projects' jobs; admins see all.
func TestJobVisibility(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "mine-1", `{kind: command, command: [true], name: mine, priority: low, resources: {cpu: "1"}}`)
	submit(t, e, "u1", "web-1", webSpec)
	submit(t, e, "m1", "proj-1", `{kind: command, command: [true], name: proj, project: perception, priority: low, resources: {cpu: "1"}}`)
	submit(t, e, "u2", "theirs-1", `{kind: command, command: [true], name: theirs, priority: low, resources: {cpu: "1"}}`)
	e.Store.Schedule(t, apitest.T0)

	list := func(user structs.UserID, query string) (int, []structs.JobID) {
		status, body := do(t, e, e.Tokens[user], "GET", "/v1/jobs"+query, "")
		var l wire.JobList
		if status == http.StatusOK {
			require.NoError(t, json.Unmarshal([]byte(body), &l))
		}
		ids := []structs.JobID{}
		for _, j := range l.Jobs {
			ids = append(ids, j.ID)
		}
		return status, ids
	}
	for _, tc := range []struct {
		name  string
		user  structs.UserID
		query string
		want  []structs.JobID
	}{
		{"owner sees own and project jobs", "u1", "", []structs.JobID{"mine-1", "proj-1", "web-1"}},
		{"member sees project jobs only", "m1", "", []structs.JobID{"proj-1", "web-1"}},
		{"other sees own only", "u2", "", []structs.JobID{"theirs-1"}},
		{"admin sees all", "admin", "", []structs.JobID{"mine-1", "proj-1", "theirs-1", "web-1"}},
		{"filter by owner", "admin", "?owner=u1", []structs.JobID{"mine-1", "web-1"}},
		{"filter by project", "u1", "?project=perception", []structs.JobID{"proj-1", "web-1"}},
		{"filter by kind", "u1", "?kind=service", []structs.JobID{"web-1"}},
		{"filter by state", "admin", "?state=Scheduled&kind=service", []structs.JobID{"web-1"}},
		{"another owner's jobs stay hidden", "u2", "?owner=u1", []structs.JobID{}},
	} {
		status, ids := list(tc.user, tc.query)
		assert.Equal(t, http.StatusOK, status, tc.name)
		assert.ElementsMatch(t, tc.want, ids, tc.name)
	}
	for _, q := range []string{"?state=Bogus", "?colour=red", "?kind=bogus"} {
		status, _ := list("u1", q)
		assert.Equal(t, http.StatusBadRequest, status, q)
	}
	status, body := do(t, e, e.Tokens["u1"], "GET", "/v1/jobs?kind=bogus", "")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `kind \"bogus\" is not allowed: use mpi, spark, service or command, or a plugin's kind (this coordinator has none`)
	status, ids := list("u1", "?kind=spark") // a kind no job has yet
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, ids)
	// A member operates the project's jobs; a non-member cannot see them.
	status, _ = do(t, e, e.Tokens["m1"], "GET", "/v1/jobs/web-1", "")
	assert.Equal(t, http.StatusOK, status)
	status, _ = do(t, e, e.Tokens["m1"], "GET", "/v1/jobs/mine-1", "")
	assert.Equal(t, http.StatusNotFound, status)
}
