package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

const lowSpec = `{kind: command, command: [true], name: batch, priority: low, resources: {cpu: "1", memory: 1Gi}}`

func newClient(e *apitest.Env, user structs.UserID) *client.Client {
	c := client.New(e.URL(), e.Tokens[user])
	c.Backoff = func(int) time.Duration { return 0 }
	return c
}

func TestJobsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := apitest.NewEnv(t, "")
	u1 := newClient(e, "u1")

	sub, err := u1.SubmitJob(ctx, []byte(`{kind: service, command: [true], name: web, project: perception, replicas: 2, minAvailable: 1, resources: {accelerators: {type: A100, count: 1}}}`), "")
	require.NoError(t, err)
	assert.Equal(t, structs.JobID("web-00001"), sub.JobID)
	assert.Len(t, sub.RequestID, 32, "a request ID is made when the caller gives none")

	jobs, err := u1.ListJobs(ctx, client.JobFilter{Kind: structs.KindService})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	jobs, err = u1.ListJobs(ctx, client.JobFilter{State: structs.JobRunning})
	require.NoError(t, err)
	assert.Empty(t, jobs)

	w, err := u1.Why(ctx, sub.JobID)
	require.NoError(t, err)
	assert.True(t, w.Pending)

	e.Store.Schedule(t, apitest.T0)
	js, err := u1.Job(ctx, sub.JobID)
	require.NoError(t, err)
	assert.Equal(t, structs.JobScheduled, js.Job.State)
	require.Len(t, js.Tasks, 2)

	tok := e.Store.Tokens()[js.Tasks[0].ID]
	hb, err := u1.Heartbeat(ctx, js.Tasks[0].ID, tok, wire.Heartbeat{State: structs.TaskRunning})
	require.NoError(t, err)
	assert.Equal(t, structs.TaskRunning, hb.State)
	peers, err := u1.Peers(ctx, js.Tasks[1].ID, tok)
	require.NoError(t, err)
	assert.Len(t, peers.Peers, 2)
	_, err = u1.Heartbeat(ctx, js.Tasks[0].ID, e.Tokens["u1"], wire.Heartbeat{})
	assert.ErrorIs(t, err, client.ErrUnauthorized, "user tokens do not heartbeat")

	js, err = u1.ScaleService(ctx, sub.JobID, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, js.Job.Replicas)
	js, err = u1.CancelJob(ctx, sub.JobID)
	require.NoError(t, err)
	assert.Equal(t, structs.JobCancelled, js.Job.State)
	_, err = u1.CancelJob(ctx, sub.JobID)
	assert.ErrorIs(t, err, client.ErrConflict)

	_, err = newClient(e, "u2").Job(ctx, sub.JobID)
	assert.ErrorIs(t, err, client.ErrNotFound)
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.Status)
	assert.Equal(t, "job web-00001 not found", ae.Message)
}

func TestTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := apitest.NewEnv(t, "")
	u1 := newClient(e, "u1")
	_, err := u1.SubmitJob(ctx, []byte(`{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 8}}}`), "")
	require.NoError(t, err)
	_, err = u1.SubmitJob(ctx, []byte(`{kind: command, command: [true], name: b, resources: {accelerators: {type: A100, count: 8}}}`), "")
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	assert.ErrorIs(t, err, client.ErrConflict)
	require.NotNil(t, ae.Quota)
	assert.Equal(t, int64(8), ae.Quota.Used)

	_, err = u1.SubmitJob(ctx, []byte(`{kind: command, command: [true], name: c, resources: {accelerators: {type: A100, count: 9}}}`), "")
	require.ErrorAs(t, err, &ae)
	assert.ErrorIs(t, err, client.ErrUnsatisfiable)
	assert.NotNil(t, ae.Why)

	_, err = u1.SubmitJob(ctx, []byte(`{kind: command, command: [true], name: Bad}`), "")
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = u1.SetPool(ctx, []byte(`{name: vision, project: vision}`))
	assert.ErrorIs(t, err, client.ErrForbidden)
	_, err = client.New(e.URL(), "").ListJobs(ctx, client.JobFilter{})
	assert.ErrorIs(t, err, client.ErrUnauthorized)
	_, err = u1.SetQuota(ctx, []byte(`{limits: {cpu: 1}}`))
	assert.EqualError(t, err, "quota spec: scope is required, such as scope: user:alice")
}

func TestAdminRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := apitest.NewEnv(t, "")
	admin := newClient(e, "admin")

	q, err := admin.SetQuota(ctx, []byte("scope: user:u2\nlimits: {gpu/A100: 2}\n"))
	require.NoError(t, err)
	assert.Equal(t, structs.ResourceList{"gpu/A100": 2}, q.Limits)
	q, err = newClient(e, "u2").Quota(ctx, "user:u2")
	require.NoError(t, err)
	assert.Equal(t, structs.ResourceList{"gpu/A100": 2}, q.Limits)
	qs, err := admin.Quotas(ctx)
	require.NoError(t, err)
	assert.Len(t, qs, 3)

	p, err := admin.SetPool(ctx, []byte(`{"name": "vision", "project": "vision", "members": ["u2"]}`))
	require.NoError(t, err)
	assert.Equal(t, structs.PoolID("vision"), p.Name)
	n, err := admin.SetNode(ctx, []byte("name: v1\npool: vision\ncpu: 8\nmemory: 32Gi\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(8000), n.Capacity.MilliCPU)
	cl, err := admin.SetCluster(ctx, []byte("name: remote\nbackend: kubernetes\n"))
	require.NoError(t, err)
	assert.Equal(t, "kubernetes", cl.Backend)

	pools, err := admin.Pools(ctx)
	require.NoError(t, err)
	assert.Len(t, pools, 2)
	nodes, err := admin.Nodes(ctx)
	require.NoError(t, err)
	assert.Len(t, nodes, 4)
	clusters, err := admin.Clusters(ctx)
	require.NoError(t, err)
	assert.Len(t, clusters, 2)
	_, err = admin.Pool(ctx, "vision")
	require.NoError(t, err)
	_, err = admin.Node(ctx, "v1")
	require.NoError(t, err)
	_, err = admin.Cluster(ctx, "remote")
	require.NoError(t, err)

	assert.ErrorIs(t, admin.DeletePool(ctx, "vision"), client.ErrConflict, "v1 still belongs to it")
	require.NoError(t, admin.DeleteNode(ctx, "v1"))
	require.NoError(t, admin.DeletePool(ctx, "vision"))
	_, err = admin.Pool(ctx, "vision")
	assert.ErrorIs(t, err, client.ErrNotFound)

	rel, err := admin.ReleaseNode(ctx, "g1", nil)
	require.NoError(t, err)
	assert.Equal(t, []int{}, rel.Released, "nothing was quarantined")
	assert.Equal(t, structs.NodeID("g1"), rel.Node.Name)
	_, err = admin.ReleaseNode(ctx, "g1", []int{8})
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = newClient(e, "u1").ReleaseNode(ctx, "g1", nil)
	assert.ErrorIs(t, err, client.ErrForbidden)
}

// flaky answers the first fail submissions with 503; with lose set it
// lets them through to the API first and only loses the reply, as a
// leader that committed and then lost its leadership would.
type flaky struct {
	next http.Handler
	fail int
	lose bool

	mu   sync.Mutex
	keys []string // Idempotency-Key of every submission seen
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/jobs" {
		f.next.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get(wire.HeaderIdempotencyKey))
	failing := len(f.keys) <= f.fail
	f.mu.Unlock()
	if !failing {
		f.next.ServeHTTP(w, r)
		return
	}
	if f.lose {
		f.next.ServeHTTP(httptest.NewRecorder(), r)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"error": "leadership lost while committing log: outcome unknown: retry with the same request ID"}`))
}

func TestSubmitRetriesKeepTheRequestID(t *testing.T) {
	t.Parallel()
	for _, lose := range []bool{false, true} {
		e := apitest.NewEnv(t, "")
		f := &flaky{next: e.Server.Config.Handler, fail: 2, lose: lose}
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		c := client.New(srv.URL, e.Tokens["u1"])
		var waits []int
		c.Backoff = func(n int) time.Duration { waits = append(waits, n); return 0 }

		sub, err := c.SubmitJob(context.Background(), []byte(lowSpec), "")
		require.NoError(t, err, "lose=%v", lose)
		assert.Equal(t, lose, sub.Existing, "a lost reply's retry finds the job the first attempt made")
		require.Len(t, f.keys, 3)
		assert.NotEmpty(t, f.keys[0])
		assert.Equal(t, []string{f.keys[0], f.keys[0], f.keys[0]}, f.keys, "every attempt carries the same request ID")
		assert.Equal(t, []int{1, 2}, waits)
		var jobs int
		e.Store.Read(func(st *state.State) { jobs = len(st.Jobs) })
		assert.Equal(t, 1, jobs, "lose=%v: one job, never two", lose)
	}
}

func TestRetriesEnd(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	f := &flaky{next: e.Server.Config.Handler, fail: 100}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, e.Tokens["u1"])
	c.Backoff, c.Retries = func(int) time.Duration { return 0 }, 3
	_, err := c.SubmitJob(context.Background(), []byte(lowSpec), "mine")
	assert.ErrorIs(t, err, client.ErrUnavailable)
	assert.Contains(t, err.Error(), "retry with the same request ID")
	assert.Equal(t, []string{"mine", "mine", "mine", "mine"}, f.keys)
}

// A connection that drops without an answer is retried too.
func TestRetriesUnansweredRequests(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	var mu sync.Mutex
	dropped := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		drop := dropped < 1
		dropped++
		mu.Unlock()
		if drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			require.NoError(t, err)
			_ = conn.Close()
			return
		}
		e.Server.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, e.Tokens["u1"])
	c.Backoff = func(int) time.Duration { return 0 }
	jobs, err := c.ListJobs(context.Background(), client.JobFilter{})
	require.NoError(t, err)
	assert.Empty(t, jobs)
	assert.Equal(t, 2, dropped)
}

func TestContextEndsRetries(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	f := &flaky{next: e.Server.Config.Handler, fail: 100}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, e.Tokens["u1"])
	ctx, cancel := context.WithCancel(context.Background())
	c.Backoff = func(n int) time.Duration {
		cancel()
		return time.Hour // never waited out: the context ends first
	}
	_, err := c.SubmitJob(ctx, []byte(lowSpec), "")
	assert.ErrorIs(t, err, client.ErrUnavailable)
	assert.Len(t, f.keys, 1)
}

func TestNewNormalisesTheAddress(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "http://127.0.0.1:7070", client.New("127.0.0.1:7070/", "").Addr())
	assert.Equal(t, "https://c.example", client.New("https://c.example", "").Addr())
	assert.False(t, errors.Is(&client.Error{Status: 500}, client.ErrNotFound))
}
