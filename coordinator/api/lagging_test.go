package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// follower is a server whose state lags the leader's: it has applied
// nothing yet. Its Heartbeat goes to the leader, as the daemon forwards
// it, and the leader's refusal comes back with its status. CatchUp fails
// while cut is set; otherwise the follower then has the leader's state.
type follower struct {
	*apitest.Store
	leader *apitest.Store
	cut    bool
}

func (f *follower) Lagging() bool { return true }

func (f *follower) CatchUp(context.Context) error {
	if f.cut {
		return errors.New("no leader is known")
	}
	f.Store = f.leader
	return nil
}

func (f *follower) Heartbeat(id structs.TaskID, token string, ev structs.TaskEvent) error {
	err := f.leader.Heartbeat(id, token, ev)
	if errors.Is(err, apitest.ErrBadToken) {
		return &api.StatusError{Status: http.StatusUnauthorized, Msg: "the leader refused the token: " + err.Error()}
	}
	return err
}

// A follower that has not applied a task's placement yet takes its
// heartbeats to the leader instead of refusing the token: atom took that
// 401 for good and dropped its final report, so a job that had succeeded
// was declared lost (found by make chaos). A bad token is still refused,
// by the leader; a server that does not lag refuses an unknown task at
// once, as before.
func TestLaggingFollowerPassesUnknownTasksOn(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "batch-1", lowSpec)
	e.Store.Schedule(t, apitest.T0)
	tasks := e.Store.Tasks("batch-1")
	require.Len(t, tasks, 1)
	id, tok := tasks[0].ID, e.Store.Tokens()[tasks[0].ID]
	path := "/v1/tasks/" + string(id) + "/heartbeat"

	serve := func(store api.Store) *apitest.Env {
		srv := httptest.NewServer(api.New(store, api.Config{}))
		t.Cleanup(srv.Close)
		return &apitest.Env{Server: srv}
	}
	f := serve(&follower{Store: apitest.NewStore(), leader: e.Store})
	status, body := do(t, f, tok, "POST", path, `{"state": "Running"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.TaskRunning, e.Store.Tasks("batch-1")[0].State, "the leader got the report")
	status, body = do(t, f, tok, "POST", path, `{"state": "Succeeded"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.JobSucceeded, e.Store.Job("batch-1").State)

	status, body = do(t, f, "not-"+tok, "POST", path, `{}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, errMsg(t, body), "the leader refused the token")

	status, body = do(t, serve(apitest.NewStore()), tok, "POST", path, `{}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, errMsg(t, body), "the token is not an allocation token of task "+string(id))
}

// A follower that does not have a job catches up with the leader before it
// says the job is not found: the job may have been accepted through
// another server a moment ago (found by make chaos: a follower just back
// from a cut answered 404 to the cancel of an acknowledged job). When it
// cannot catch up it says retry (503); a job that does not exist is still
// not found.
func TestLaggingFollowerCatchesUpBeforeNotFound(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "batch-1", lowSpec)
	f := &follower{Store: apitest.NewStore(), leader: e.Store, cut: true}
	srv := httptest.NewServer(api.New(f, api.Config{Tokens: api.TokenFile{Users: []api.User{{Name: "u1", Token: e.Tokens["u1"]}}}}))
	t.Cleanup(srv.Close)
	fe := &apitest.Env{Server: srv}

	status, body := do(t, fe, e.Tokens["u1"], "POST", "/v1/jobs/batch-1/cancel", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, errMsg(t, body), "job batch-1 is not known to this server, which cannot catch up with the leader now (no leader is known): retry")
	f.cut = false
	status, body = do(t, fe, e.Tokens["u1"], "POST", "/v1/jobs/batch-1/cancel", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, structs.JobCancelled, e.Store.Job("batch-1").State)
	status, _ = do(t, fe, e.Tokens["u1"], "GET", "/v1/jobs/nope-1", "")
	assert.Equal(t, http.StatusNotFound, status)
}

// deposed is a leader cut off from the others that does not know yet that
// another has been elected: it cannot confirm it leads.
type deposed struct{ *apitest.Store }

func (deposed) Lagging() bool                 { return false }
func (deposed) CatchUp(context.Context) error { return errors.New("leadership lost") }

// A leader answers that a task or job is not known only once a quorum has
// confirmed it still leads; a deposed one that does not know it yet says
// retry, since the task may have been placed by its successor.
func TestDeposedLeaderDoesNotRefuseWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "batch-1", lowSpec)
	e.Store.Schedule(t, apitest.T0)
	task := e.Store.Tasks("batch-1")[0]
	srv := httptest.NewServer(api.New(deposed{apitest.NewStore()}, api.Config{Tokens: api.TokenFile{Users: []api.User{{Name: "u1", Token: e.Tokens["u1"]}}}}))
	t.Cleanup(srv.Close)
	d := &apitest.Env{Server: srv}
	status, body := do(t, d, e.Store.Tokens()[task.ID], "POST", "/v1/tasks/"+string(task.ID)+"/heartbeat", `{"state": "Succeeded"}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, errMsg(t, body), "cannot confirm it leads (leadership lost): retry")
	status, _ = do(t, d, e.Tokens["u1"], "GET", "/v1/jobs/batch-1", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
}
