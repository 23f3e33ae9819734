package rsh

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// PeerLister looks up a task's peers with an allocation token
// (GET /v1/tasks/{id}/peers): *client.Client and Coordinators are ones.
type PeerLister interface {
	Peers(ctx context.Context, id structs.TaskID, allocToken string) (*wire.PeerList, error)
}

// Coordinators is a PeerLister over every coordinator server in addrs
// (comma-separated URLs, as in ATOM_COORDINATOR). A lookup that fails on
// one server is tried on the next: a follower that has not yet applied a
// new attempt refuses its tokens, and a server may be down.
func Coordinators(addrs string) PeerLister {
	var cs coordinators
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c := client.New(a, "")
			c.Retries = 2
			cs = append(cs, c)
		}
	}
	return cs
}

type coordinators []*client.Client

func (cs coordinators) Peers(ctx context.Context, id structs.TaskID, tok string) (*wire.PeerList, error) {
	if len(cs) == 0 {
		return nil, errors.New("no coordinator: set ATOM_COORDINATOR")
	}
	var first error
	for _, c := range cs {
		pl, err := c.Peers(ctx, id, tok)
		if err == nil {
			return pl, nil
		}
		if first == nil {
			first = fmt.Errorf("%s: %w", c.Addr(), err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// PeerVerifier accepts a launch request's token when the coordinator
// lists this task's peers for it: the token is the allocation token of a
// live task of the current attempt of this task's job, and this task is
// one too. Successes are remembered for TTL; refusals are not.
type PeerVerifier struct {
	Peers PeerLister
	Self  structs.TaskID
	TTL   time.Duration // default 30 s
	Now   func() time.Time

	mu sync.Mutex
	ok map[[32]byte]time.Time // token hash -> accepted until
}

// Verify implements Config.Verify.
func (v *PeerVerifier) Verify(ctx context.Context, token string) error {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	key := sha256.Sum256([]byte(token))
	v.mu.Lock()
	until, hit := v.ok[key]
	v.mu.Unlock()
	if hit && now().Before(until) {
		return nil
	}
	if _, err := v.Peers.Peers(ctx, v.Self, token); err != nil {
		return fmt.Errorf("the coordinator does not accept the token for task %s's job: %w", v.Self, err)
	}
	ttl := v.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	v.mu.Lock()
	if v.ok == nil {
		v.ok = map[[32]byte]time.Time{}
	}
	for k, u := range v.ok {
		if !now().Before(u) {
			delete(v.ok, k)
		}
	}
	v.ok[key] = now().Add(ttl)
	v.mu.Unlock()
	return nil
}

// Resolve returns the launch endpoint of host, a task of the same job as
// self, as the coordinator lists it.
func Resolve(ctx context.Context, pl PeerLister, self structs.TaskID, token, host string) (string, error) {
	l, err := pl.Peers(ctx, self, token)
	if err != nil {
		return "", fmt.Errorf("look up host %s: %w", host, err)
	}
	for _, p := range l.Peers {
		if string(p.Task) != host {
			continue
		}
		if p.Endpoint == "" {
			return "", fmt.Errorf("host %s (replica %d, %s) has not reported a launch endpoint yet", host, p.Index, p.State)
		}
		return p.Endpoint, nil
	}
	ids := make([]string, len(l.Peers))
	for i, p := range l.Peers {
		ids[i] = string(p.Task)
	}
	return "", fmt.Errorf("host %s is not a live task of job %s's attempt %d: its tasks are %s", host, l.Job, structs.AttemptNumber(l.Attempt), strings.Join(ids, ", "))
}
