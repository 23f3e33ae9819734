package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Events are shown to whoever may see their job: a job's own to its
// owner and project members, the cluster's list filtered the same way
// (admins see all); since and limit narrow them.
func TestEvents(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "mine-1", `{kind: command, command: [true], name: mine, priority: low, resources: {cpu: "1"}}`)
	submit(t, e, "m1", "proj-1", `{kind: command, command: [true], name: proj, project: perception, priority: low, resources: {cpu: "1"}}`)
	submit(t, e, "u2", "theirs-1", `{kind: command, command: [true], name: theirs, priority: low, resources: {cpu: "1"}}`)
	e.Store.Schedule(t, apitest.T0)
	status, body := do(t, e, e.Tokens["u1"], "POST", "/v1/jobs/mine-1/cancel", "")
	require.Equal(t, http.StatusOK, status, body)

	get := func(user structs.UserID, path string) (int, wire.EventList) {
		t.Helper()
		status, body := do(t, e, e.Tokens[user], "GET", path, "")
		if status != http.StatusOK {
			return status, wire.EventList{}
		}
		return status, decode[wire.EventList](t, body)
	}
	jobsOf := func(l wire.EventList) []structs.JobID {
		var out []structs.JobID
		for _, ev := range l.Events {
			if len(out) == 0 || out[len(out)-1] != ev.Job {
				out = append(out, ev.Job)
			}
		}
		return out
	}

	status, mine := get("u1", "/v1/jobs/mine-1/events")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, structs.JobID("mine-1"), mine.Job)
	var types []structs.EventType
	for _, ev := range mine.Events {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []structs.EventType{structs.EventSubmitted, structs.EventPlaced, structs.EventCancelled}, types)
	assert.Equal(t, "cancelled by u1; stopping 1 task(s)", mine.Events[2].Message, "the API says who cancelled")
	assert.Equal(t, apitest.T0, mine.Events[2].Time)
	assert.Equal(t, uint64(7), mine.Latest)

	status, _ = get("u2", "/v1/jobs/mine-1/events")
	assert.Equal(t, http.StatusNotFound, status, "another user's job is not found")
	status, _ = get("m1", "/v1/jobs/proj-1/events")
	assert.Equal(t, http.StatusOK, status)

	for user, want := range map[structs.UserID][]structs.JobID{
		"u1":    {"mine-1", "proj-1", "mine-1", "proj-1", "mine-1"},
		"m1":    {"proj-1"},
		"u2":    {"theirs-1"},
		"admin": {"mine-1", "proj-1", "theirs-1", "mine-1", "proj-1", "theirs-1", "mine-1"},
	} {
		status, l := get(user, "/v1/events")
		require.Equal(t, http.StatusOK, status, user)
		assert.Equal(t, want, jobsOf(l), user)
		assert.Equal(t, uint64(7), l.Latest, "latest counts what the caller may not see too")
	}

	// since=latest: nothing new; limit keeps the newest.
	status, l := get("admin", "/v1/events?since=7")
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, l.Events)
	assert.NotNil(t, l.Events, "an empty list, not null")
	status, l = get("admin", "/v1/events?since=2&limit=2")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, l.Events, 2)
	assert.Equal(t, []uint64{6, 7}, []uint64{l.Events[0].Seq, l.Events[1].Seq})
	assert.True(t, l.Truncated)
	status, l = get("admin", "/v1/events?since="+apitest.T0.Format("2006-01-02T15:04:05Z")+"&limit=1000")
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, l.Events, 7)
	assert.False(t, l.Truncated)

	for q, want := range map[string]string{
		"?since=yesterday":             `since "yesterday" is not allowed: use an event number`,
		"?limit=0":                     `limit "0" is not allowed: use a whole number from 1 to 1000 (default 100)`,
		"?limit=" + strconv.Itoa(1001): `limit "1001" is not allowed`,
		"?job=mine-1":                  `query parameter "job" is not known: use since or limit`,
	} {
		for _, path := range []string{"/v1/events", "/v1/jobs/mine-1/events"} {
			status, body := do(t, e, e.Tokens["u1"], "GET", path+q, "")
			assert.Equal(t, http.StatusBadRequest, status, path+q)
			assert.Contains(t, errMsg(t, body), want, path+q)
		}
	}
}
