package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// waitFor bounds every Eventually: generous for -race on two cores.
const (
	waitFor = 15 * time.Second
	tick    = 5 * time.Millisecond
)

// tWriter sends log lines to t until the test ends (logging after that
// panics, and Raft's goroutines may outlive a cleanup by a moment).
type tWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// testLogger logs through t: warnings and errors, or everything with
// ATOM_TEST_LOG=debug.
func testLogger(t testing.TB) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { // registered first, so it runs last
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	level := slog.LevelWarn
	if os.Getenv("ATOM_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// cluster is a set of real servers on loopback TCP, each with its own
// data dir. Server 0 bootstraps; the others join through JoinFunc, which
// calls AddVoter in process (the HTTP layer's job in production).
type cluster struct {
	t   *testing.T
	mu  sync.Mutex // guards srv
	srv []*server.Server
	cfg []server.Config
}

func newCluster(t *testing.T, n int, opt func(*server.Config)) *cluster {
	t.Helper()
	log := testLogger(t)
	c := &cluster{t: t}
	t.Cleanup(func() {
		for i := range c.cfg {
			c.stop(i)
		}
	})
	for i := range n {
		cfg := server.Config{
			ID:           fmt.Sprintf("s%d", i),
			RaftAddr:     "127.0.0.1:0",
			DataDir:      t.TempDir(),
			Bootstrap:    i == 0,
			Cycle:        20 * time.Millisecond,
			HeartbeatTTL: time.Minute,
			Logger:       log,
		}
		if i > 0 {
			cfg.Join = []string{"s0"}
			cfg.JoinFunc = c.join
		}
		if opt != nil {
			opt(&cfg)
		}
		s, err := server.New(cfg)
		require.NoError(t, err)
		cfg.RaftAddr = s.RaftAddr() // a restart must reuse it
		c.mu.Lock()
		c.srv, c.cfg = append(c.srv, s), append(c.cfg, cfg)
		c.mu.Unlock()
		if i == 0 {
			c.leader()
		}
	}
	require.Eventually(t, func() bool {
		for _, s := range c.live() {
			peers, err := s.Peers()
			if id, _ := s.Leader(); err != nil || id == "" || len(peers) != n {
				return false
			}
		}
		return true
	}, waitFor, tick, "cluster of %d never formed", n)
	return c
}

// join is the JoinFunc: addr is a server ID here.
func (c *cluster) join(_ context.Context, addr, id, raftAddr string) error {
	c.mu.Lock()
	var to *server.Server
	for _, s := range c.srv {
		if s != nil && s.ID() == addr {
			to = s
		}
	}
	c.mu.Unlock()
	if to == nil {
		return fmt.Errorf("no server %s", addr)
	}
	return to.AddVoter(id, raftAddr)
}

// live returns the running servers.
func (c *cluster) live() []*server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server.Server
	for _, s := range c.srv {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (c *cluster) leaderOrNil() *server.Server {
	for _, s := range c.live() {
		if s.IsLeader() {
			return s
		}
	}
	return nil
}

// leader waits for a leader among the running servers.
func (c *cluster) leader() *server.Server {
	c.t.Helper()
	var l *server.Server
	require.Eventually(c.t, func() bool { l = c.leaderOrNil(); return l != nil }, waitFor, tick, "no leader")
	return l
}

// index returns the position of s.
func (c *cluster) index(s *server.Server) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.srv {
		if o == s {
			return i
		}
	}
	return -1
}

// stop shuts server i down (no leadership transfer).
func (c *cluster) stop(i int) {
	c.mu.Lock()
	s := c.srv[i]
	c.srv[i] = nil
	c.mu.Unlock()
	if s != nil {
		require.NoError(c.t, s.Shutdown())
	}
}

// restart starts server i again from its data dir.
func (c *cluster) restart(i int) *server.Server {
	c.t.Helper()
	cfg := c.cfg[i]
	cfg.Bootstrap, cfg.Join = false, nil
	s, err := server.New(cfg)
	require.NoError(c.t, err)
	c.mu.Lock()
	c.srv[i] = s
	c.mu.Unlock()
	return s
}

// apply commits cmd on whoever leads, retrying while leadership moves.
func (c *cluster) apply(cmd state.Command) any {
	c.t.Helper()
	var (
		res any
		err error
	)
	require.Eventually(c.t, func() bool {
		l := c.leaderOrNil()
		if l == nil {
			return false
		}
		res, err = l.Apply(context.Background(), cmd)
		return !retryable(err)
	}, waitFor, tick)
	require.NoError(c.t, err, "apply %T", cmd)
	return res
}

func retryable(err error) bool {
	return errors.Is(err, server.ErrNotLeader) || errors.Is(err, server.ErrOutcomeUnknown)
}

// stateJSON returns s's whole state as JSON.
func stateJSON(t testing.TB, s *server.Server) string {
	t.Helper()
	var b []byte
	var err error
	s.Read(func(st *state.State) { b, err = json.Marshal(st) })
	require.NoError(t, err)
	return string(b)
}

// converged waits until every running server has the same state and
// returns it.
func (c *cluster) converged() string {
	c.t.Helper()
	var want string
	require.Eventually(c.t, func() bool {
		ss := c.live()
		want = stateJSON(c.t, ss[0])
		for _, s := range ss[1:] {
			if stateJSON(c.t, s) != want {
				return false
			}
		}
		return true
	}, waitFor, tick, "servers never converged")
	return want
}

// seed adds nodes and a generous quota for user u1.
func (c *cluster) seed(nodes ...*structs.Node) {
	c.t.Helper()
	for _, n := range nodes {
		c.apply(&state.NodeUpsert{Node: n})
	}
	c.apply(&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{
		"cpu": 1 << 40, "memory": 1 << 60, "gpu/A": 1 << 20,
	}}})
}

// cpuJob is a one-replica CPU job of u1 with a fresh ID.
func cpuJob(name string, id int) *structs.Job {
	j := st.NewJob(name, "u1").CPU(1, 1).Obj()
	j.ID = structs.JobID(fmt.Sprintf("%s-%d", name, id))
	return j
}

// jobOf returns job id as s sees it (nil when absent).
func jobOf(s *server.Server, id structs.JobID) *structs.Job {
	var j *structs.Job
	s.Read(func(st *state.State) { j = st.Jobs[id] })
	return j
}

// tasksOf returns job id's tasks and their tokens as s sees them.
func tasksOf(s *server.Server, id structs.JobID) ([]*structs.Task, map[structs.TaskID]string) {
	var ts []*structs.Task
	toks := map[structs.TaskID]string{}
	s.Read(func(st *state.State) {
		ts = st.TasksOf(id)
		for _, t := range ts {
			toks[t.ID] = st.Tokens[t.ID]
		}
	})
	return ts, toks
}

// The server is the HTTP API's store.
var _ api.Store = (*server.Server)(nil)
