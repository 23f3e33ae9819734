package api_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Fuzz targets for every API endpoint that decodes a body. Each drives the
// real handler of an apitest.Env (the API over a real FSM) and checks, for
// any body: no panic; a 2xx or 4xx status, never 5xx; a JSON body, which
// for a 4xx is a wire.Error with a message; and, for a 4xx, a state equal
// to the state before the request (Store.StateJSON, which ignores the log
// index). The seed corpora are in testdata/fuzz/<Target>; plain go test
// runs them. `make fuzz` runs each target for a bounded count.
//
// One Env serves a target's whole run (a fresh one per request would cost
// more than the request); it is rebuilt once `limit` requests have changed
// the state, so accepted requests neither pile up in the state nor leave
// it where the endpoint has nothing left to decode (an ended task, say).

// fuzzEnv is a target's Env and what rebuilding it takes.
type fuzzEnv struct {
	setup   func(testing.TB, *apitest.Env) // seeds a new Env
	limit   int                            // state changes before a rebuild
	e       *apitest.Env
	changes int
	closers []func() // the current Env's cleanups (its server's Close)
}

// envTB hands NewEnv's cleanups to the fuzzEnv instead of the test (or the
// iteration of the fuzz function) that built it, so the Env outlives it.
type envTB struct {
	testing.TB
	fe *fuzzEnv
}

func (k envTB) Cleanup(fn func()) { k.fe.closers = append(k.fe.closers, fn) }

func newFuzzEnv(f *testing.F, limit int, setup func(testing.TB, *apitest.Env)) *fuzzEnv {
	fe := &fuzzEnv{setup: setup, limit: limit}
	fe.rebuild(f)
	f.Cleanup(fe.close)
	return fe
}

func (fe *fuzzEnv) close() {
	for i := len(fe.closers) - 1; i >= 0; i-- {
		fe.closers[i]()
	}
	fe.closers = nil
}

func (fe *fuzzEnv) rebuild(tb testing.TB) {
	fe.close()
	fe.e = apitest.NewEnv(envTB{TB: tb, fe: fe}, "")
	if fe.setup != nil {
		fe.setup(tb, fe.e)
	}
	fe.changes = 0
}

// token returns user u's token.
func (fe *fuzzEnv) token(u structs.UserID) string { return fe.e.Tokens[u] }

// call sends one request to the Env's handler and checks the invariants.
func (fe *fuzzEnv) call(t *testing.T, token, method, path string, body []byte) {
	t.Helper()
	before := fe.e.Store.StateJSON(t)
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	fe.e.Server.Config.Handler.ServeHTTP(rec, req)
	after := fe.e.Store.StateJSON(t)

	status, out := rec.Code, rec.Body.Bytes()
	if status < 200 || status >= 300 && status < 400 || status >= 500 {
		t.Fatalf("%s %s: status %d (want 2xx or 4xx): %s\nbody sent: %q", method, path, status, out, body)
	}
	if !json.Valid(out) {
		t.Fatalf("%s %s: status %d: the response is not JSON: %q\nbody sent: %q", method, path, status, out, body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: status %d: Content-Type %q, want application/json\nbody sent: %q", method, path, status, ct, body)
	}
	if status >= 400 {
		var e wire.Error
		if err := json.Unmarshal(out, &e); err != nil || e.Error == "" {
			t.Fatalf("%s %s: status %d: the response has no error message (%v): %s\nbody sent: %q", method, path, status, err, out, body)
		}
		if before != after {
			t.Fatalf("%s %s: status %d (%s) but the state changed\nbefore: %s\nafter:  %s\nbody sent: %q", method, path, status, e.Error, before, after, body)
		}
	}
	if before != after {
		if fe.changes++; fe.changes >= fe.limit {
			fe.rebuild(t)
		}
	}
}

// pick chooses one of xs by a fuzzed byte.
func pick[T any](b uint8, xs ...T) T { return xs[int(b)%len(xs)] }

// placedEnv seeds an Env as TestBadInputChangesNothing does: u1's service
// web-1 (project perception, placed: tasks web-1-0-a0 and web-1-1-a0),
// low-priority command low-1, service pub-1 on public GPUs, and command
// done-1, succeeded.
func placedEnv(tb testing.TB, e *apitest.Env) {
	fsubmit(tb, e, "u1", "web-1", webSpec)
	fsubmit(tb, e, "u1", "low-1", lowSpec)
	fsubmit(tb, e, "u1", "pub-1", `{kind: service, command: [true], name: pub, replicas: 2, minAvailable: 1, resources: {accelerators: {type: A100, count: 4}}}`)
	fsubmit(tb, e, "u1", "done-1", `{kind: command, command: [true], name: done, priority: low, resources: {cpu: "1"}}`)
	e.Store.Schedule(tb, apitest.T0)
	for _, tk := range e.Store.Tasks("done-1") {
		e.Store.Report(tb, tk.ID, structs.TaskSucceeded, apitest.T0)
	}
	require.NotEmpty(tb, e.Store.Tokens()[fuzzTask], "task %s is placed", fuzzTask)
}

// fsubmit is submit for a testing.TB (the fuzz setup runs under *testing.F).
func fsubmit(tb testing.TB, e *apitest.Env, owner structs.UserID, id, spec string) {
	tb.Helper()
	s, err := structs.ParseJobSpec([]byte(spec))
	require.NoError(tb, err)
	j, err := s.ToJob(owner)
	require.NoError(tb, err)
	j.ID = structs.JobID(id)
	e.Store.Must(tb, &state.JobSubmit{Job: j, Now: apitest.T0})
}

// fuzzTask is the placed task whose allocation token FuzzHeartbeat uses.
const fuzzTask = "web-1-0-a0"

// FuzzSubmitJob: POST /v1/jobs with any body, as u1, u2, m1 or admin.
func FuzzSubmitJob(f *testing.F) {
	fe := newFuzzEnv(f, 32, func(tb testing.TB, e *apitest.Env) { fsubmit(tb, e, "u1", "web-1", webSpec) })
	f.Fuzz(func(t *testing.T, user uint8, body []byte) {
		u := pick[structs.UserID](user, "u1", "u2", "m1", "admin")
		fe.call(t, fe.token(u), "POST", "/v1/jobs", body)
	})
}

// FuzzScale: POST /v1/jobs/{id}/scale with any body, as u1, on a placed
// service, a command, a service on public GPUs, an ended job or no job.
func FuzzScale(f *testing.F) {
	fe := newFuzzEnv(f, 16, placedEnv)
	f.Fuzz(func(t *testing.T, job uint8, body []byte) {
		id := pick(job, "web-1", "low-1", "pub-1", "done-1", "nope-1")
		fe.call(t, fe.token("u1"), "POST", "/v1/jobs/"+id+"/scale", body)
	})
}

// FuzzPutQuota: PUT /v1/quotas/{scope} with any body, as admin.
func FuzzPutQuota(f *testing.F) {
	fe := newFuzzEnv(f, 32, placedEnv)
	f.Fuzz(func(t *testing.T, scope uint8, body []byte) {
		s := pick(scope, "user:u1", "user:u2", "project:perception", "project:vision", "user:newbie")
		fe.call(t, fe.token("admin"), "PUT", "/v1/quotas/"+s, body)
	})
}

// FuzzPutPool: PUT /v1/pools/{name} with any body, as admin: a new pool,
// the pool in use, the public pool, another new pool.
func FuzzPutPool(f *testing.F) {
	fe := newFuzzEnv(f, 32, placedEnv)
	f.Fuzz(func(t *testing.T, name uint8, body []byte) {
		n := pick(name, "vision", "perception", "public", "spare")
		fe.call(t, fe.token("admin"), "PUT", "/v1/pools/"+n, body)
	})
}

// FuzzPutNode: PUT /v1/nodes/{name} with any body, as admin: a new node,
// the nodes that run tasks, the idle CPU node, a new subdomain name.
func FuzzPutNode(f *testing.F) {
	fe := newFuzzEnv(f, 32, placedEnv)
	f.Fuzz(func(t *testing.T, name uint8, body []byte) {
		n := pick(name, "n9", "g1", "g2", "c1", "edge-01.lab")
		fe.call(t, fe.token("admin"), "PUT", "/v1/nodes/"+n, body)
	})
}

// FuzzPutCluster: PUT /v1/clusters/{name} with any body, as admin: a new
// cluster or the one the nodes are in.
func FuzzPutCluster(f *testing.F) {
	fe := newFuzzEnv(f, 32, placedEnv)
	f.Fuzz(func(t *testing.T, name uint8, body []byte) {
		n := pick(name, "remote", "local")
		fe.call(t, fe.token("admin"), "PUT", "/v1/clusters/"+n, body)
	})
}

// FuzzHeartbeat: POST /v1/tasks/{id}/heartbeat with any body and the
// task's own allocation token. Any change (a task running or ended)
// rebuilds the Env, so every request finds the task placed and holding.
func FuzzHeartbeat(f *testing.F) {
	fe := newFuzzEnv(f, 1, placedEnv)
	f.Fuzz(func(t *testing.T, body []byte) {
		tok := fe.e.Store.Tokens()[fuzzTask]
		fe.call(t, tok, "POST", "/v1/tasks/"+fuzzTask+"/heartbeat", body)
	})
}
