package rsh_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/rsh"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// fakePeers accepts one token for task "j-1-x" and counts lookups.
type fakePeers struct {
	mu    sync.Mutex
	calls int
}

func (f *fakePeers) Peers(_ context.Context, id structs.TaskID, tok string) (*wire.PeerList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if id != "j-1-x" || tok != good {
		return nil, &client.Error{Status: 403, Message: "task j-0-a belongs to attempt 1 of job j, which is now at attempt 2"}
	}
	return &wire.PeerList{Job: "j", Attempt: 1, Peers: []wire.Peer{
		{Task: "j-0-y", Index: 0, State: structs.TaskRunning, Endpoint: "10.0.0.1:7070"},
		{Task: "j-1-x", Index: 1, State: structs.TaskScheduled},
	}}, nil
}

func TestPeerVerifier(t *testing.T) {
	t.Parallel()
	f := &fakePeers{}
	now := time.Unix(1000, 0)
	v := &rsh.PeerVerifier{Peers: f, Self: "j-1-x", TTL: time.Minute, Now: func() time.Time { return now }}
	ctx := context.Background()
	require.NoError(t, v.Verify(ctx, good))
	require.NoError(t, v.Verify(ctx, good))
	assert.Equal(t, 1, f.calls, "a success is remembered")
	now = now.Add(time.Minute)
	require.NoError(t, v.Verify(ctx, good))
	assert.Equal(t, 2, f.calls, "for the TTL only")

	err := v.Verify(ctx, "old")
	require.Error(t, err)
	assert.Equal(t, "the coordinator does not accept the token for task j-1-x's job: task j-0-a belongs to attempt 1 of job j, which is now at attempt 2", err.Error())
	assert.Error(t, v.Verify(ctx, "old"))
	assert.Equal(t, 4, f.calls, "refusals are not remembered")

	// Through a server: the refusal reaches the client.
	s := newServer(t, rsh.Config{Verify: v.Verify})
	_, err = rsh.Run(ctx, s.Addr(), "old", []string{"true"}, nil, nil)
	assert.ErrorContains(t, err, "401 launch refused: the coordinator does not accept the token")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ep, err := rsh.Resolve(ctx, &fakePeers{}, "j-1-x", good, "j-0-y")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1:7070", ep)
	_, err = rsh.Resolve(ctx, &fakePeers{}, "j-1-x", good, "j-1-x")
	assert.EqualError(t, err, "host j-1-x (replica 1, Scheduled) has not reported a launch endpoint yet")
	_, err = rsh.Resolve(ctx, &fakePeers{}, "j-1-x", good, "j-2-old")
	assert.EqualError(t, err, "host j-2-old is not a live task of job j's attempt 2: its tasks are j-0-y, j-1-x")
	_, err = rsh.Resolve(ctx, &fakePeers{}, "j-1-x", "old", "j-0-y")
	assert.ErrorContains(t, err, "look up host j-0-y: task j-0-a belongs to attempt 1")
}
