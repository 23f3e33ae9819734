package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// Three servers form a cluster; a job submitted on the leader is placed by
// a PlanCommit and every server reaches the same state.
func TestClusterPlacesAndConverges(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil)
	c.seed(st.C64("c1"), st.G8("g1", "A"))
	l := c.leader()

	res := c.apply(&state.JobSubmit{RequestID: "r1", Job: cpuJob("web", 1), Now: time.Now()})
	assert.Equal(t, state.SubmitResult{JobID: "web-1"}, res)
	gpu := st.NewJob("train", "u1").MPI(2).GPU("A", 4).Obj()
	gpu.ID = "train-1"
	c.apply(&state.JobSubmit{RequestID: "r2", Job: gpu, Now: time.Now()})

	require.Eventually(t, func() bool {
		a, b := jobOf(l, "web-1"), jobOf(l, "train-1")
		return a != nil && b != nil && a.State == structs.JobScheduled && b.State == structs.JobScheduled
	}, waitFor, tick, "jobs never placed")
	tasks, tokens := tasksOf(l, "train-1")
	require.Len(t, tasks, 2)
	for _, tk := range tasks {
		assert.Equal(t, structs.NodeID("g1"), tk.Node)
		assert.Len(t, tokens[tk.ID], 32, "a 128-bit hex allocation token per task")
	}
	assert.NotEqual(t, tokens[tasks[0].ID], tokens[tasks[1].ID])

	want := c.converged()
	assert.Contains(t, want, `"web-1"`)
	for _, s := range c.live() {
		s.Read(func(st *state.State) { assert.NoError(t, st.CheckInvariants(), "server %s", s.ID()) })
	}

	// A follower refuses writes and names the leader.
	for _, s := range c.live() {
		if s == l {
			continue
		}
		_, err := s.Apply(context.Background(), &state.JobCancel{ID: "web-1"})
		var nl *server.NotLeaderError
		require.ErrorAs(t, err, &nl)
		assert.Equal(t, l.ID(), nl.LeaderID)
		assert.Equal(t, l.RaftAddr(), nl.LeaderAddr)
		assert.ErrorIs(t, err, server.ErrNotLeader)
	}
	// Domain errors come back as the state machine returned them.
	_, err := l.Apply(context.Background(), &state.JobCancel{ID: "nope"})
	assert.ErrorIs(t, err, state.ErrNotFound)

	assert.GreaterOrEqual(t, counter(t, l, "atom_placements_total"), 2.0)
}

// The leader is shut down while four clients submit 240 jobs; clients retry
// with the same request ID against whoever leads. Every acknowledged
// request maps to exactly one job and the survivors agree (C22).
func TestFailoverDuringSubmissions(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil)
	var nodes []*structs.Node
	for i := range 16 { // 1,024 cores: room for every job
		nodes = append(nodes, st.C64(fmt.Sprintf("c%d", i)))
	}
	c.seed(nodes...)
	old := c.leader()

	const clients, perClient = 4, 250 // 1,000 submissions, as the issue asks
	var (
		mu       sync.Mutex
		acked    = map[string]structs.JobID{} // request ID -> job
		fresh    atomic.Int64                 // job IDs: a new one per try, as an API server would
		done     atomic.Int64
		retries  atomic.Int64 // not the leader
		unknown  atomic.Int64 // outcome unknown
		existing atomic.Int64 // a retry found the job the first try made
		wg       sync.WaitGroup
	)
	submit := func(req, name string) {
		ok := assert.Eventually(t, func() bool {
			l := c.leaderOrNil()
			if l == nil {
				return false
			}
			j := cpuJob(name, int(fresh.Add(1)))
			res, err := l.Apply(context.Background(), &state.JobSubmit{RequestID: req, Job: j, Now: time.Now()})
			switch {
			case errors.Is(err, server.ErrOutcomeUnknown):
				unknown.Add(1)
				return false
			case errors.Is(err, server.ErrNotLeader):
				retries.Add(1)
				return false
			}
			if assert.NoError(t, err, "request %s", req) {
				r := res.(state.SubmitResult)
				if r.Existing {
					existing.Add(1)
				}
				mu.Lock()
				acked[req] = r.JobID
				mu.Unlock()
			}
			return true
		}, waitFor, tick, "request %s never acknowledged", req)
		if ok {
			done.Add(1)
		}
	}
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				submit(fmt.Sprintf("req-%d-%d", g, i), fmt.Sprintf("job-%d-%d", g, i))
			}
		}()
	}
	require.Eventually(t, func() bool { return done.Load() >= clients*perClient/3 }, waitFor, tick)
	c.stop(c.index(old))
	wg.Wait()
	require.Len(t, acked, clients*perClient)

	// Let the new leader place everything, then compare.
	l := c.leader()
	require.Eventually(t, func() bool {
		var n int
		l.Read(func(s *state.State) { n = len(s.Pending()) })
		return n == 0
	}, waitFor, tick, "jobs never placed")
	want := c.converged()
	require.NotEqual(t, old.ID(), l.ID())
	l.Read(func(s *state.State) {
		assert.Len(t, s.Jobs, clients*perClient, "no duplicate jobs")
		assert.Len(t, s.Requests, clients*perClient)
		names := map[string]structs.JobID{}
		for id, j := range s.Jobs {
			if o, dup := names[j.Name]; dup {
				t.Errorf("job name %s is used by %s and %s", j.Name, o, id)
			}
			names[j.Name] = id
		}
		for req, id := range acked {
			assert.Equal(t, id, s.Requests[req], "request %s", req)
			assert.NotNil(t, s.Jobs[id], "request %s: job %s", req, id)
		}
	})
	for _, s := range c.live() {
		assert.True(t, want == stateJSON(t, s), "server %s has a different state", s.ID())
		s.Read(func(st *state.State) { assert.NoError(t, st.CheckInvariants(), "server %s", s.ID()) })
	}
	t.Logf("retries: %d not the leader, %d outcome unknown; %d answered by an earlier try", retries.Load(), unknown.Load(), existing.Load())
}

// A server restarted from its data dir catches up, including what was
// committed while it was down.
func TestRestartFromDataDir(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil)
	c.seed(st.C64("c1"))
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	c.converged()

	l := c.leader()
	down := (c.index(l) + 1) % 3
	c.stop(down)
	c.apply(&state.JobSubmit{RequestID: "b", Job: cpuJob("b", 1), Now: time.Now()})
	r := c.restart(down)
	want := c.converged()
	assert.True(t, want == stateJSON(t, r), "the restarted server has a different state")
	assert.NotNil(t, jobOf(r, "b-1"))
}

// A forced snapshot is restored on restart, before any election; then the
// whole cluster restarts and has the same state.
func TestSnapshotRestore(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil)
	c.seed(st.C64("c1"), st.C64("c2"))
	for i := range 5 {
		c.apply(&state.JobSubmit{RequestID: fmt.Sprint(i), Job: cpuJob(fmt.Sprintf("j%d", i), i), Now: time.Now()})
	}
	l := c.leader()
	require.Eventually(t, func() bool {
		var n int
		l.Read(func(s *state.State) { n = len(s.Pending()) })
		return n == 0
	}, waitFor, tick, "jobs never placed")
	want := c.converged()
	for _, s := range c.live() {
		require.NoError(t, s.Snapshot())
	}
	for i := range 3 {
		c.stop(i)
	}
	// Alone, a restarted server cannot elect a leader or commit, so what it
	// holds came from its snapshot (and its log).
	r := c.restart(0)
	assert.True(t, want == stateJSON(t, r), "the restored state differs")
	c.restart(1)
	c.restart(2)
	c.leader()
	assert.True(t, want == c.converged(), "the restarted cluster's state differs")
}

// Task liveness across a failover (C20): after the election every task gets
// a full TTL of grace; a task that keeps heartbeating (to any server: the
// followers forward) stays Running, one that went silent is Lost a TTL
// after the new leader took over.
func TestHeartbeatGraceAfterFailover(t *testing.T) {
	t.Parallel()
	const ttl = 400 * time.Millisecond
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.HeartbeatTTL = ttl })
	for _, s := range c.live() {
		c.forwardFrom(s)
	}
	c.seed(st.C64("c1"))
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("alive", 1), Now: time.Now()})
	c.apply(&state.JobSubmit{RequestID: "b", Job: cpuJob("silent", 1), Now: time.Now()})
	l := c.leader()
	require.Eventually(t, func() bool {
		a, b := jobOf(l, "alive-1"), jobOf(l, "silent-1")
		return a.State == structs.JobScheduled && b.State == structs.JobScheduled
	}, waitFor, tick)
	alive, toks := tasksOf(l, "alive-1")
	silent, toks2 := tasksOf(l, "silent-1")
	a, b := alive[0], silent[0]
	running := structs.TaskEvent{State: structs.TaskRunning}
	require.NoError(t, l.Heartbeat(a.ID, toks[a.ID], running))
	require.NoError(t, l.Heartbeat(b.ID, toks2[b.ID], running))

	// The alive task heartbeats every TTL/8 to a rotating server.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(ttl / 8)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if ss := c.live(); len(ss) > 0 {
				_ = ss[i%len(ss)].Heartbeat(a.ID, toks[a.ID], running) // fails during the election
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })

	c.stop(c.index(l))
	nl := c.leader()
	elected := time.Now()
	require.Eventually(t, func() bool {
		j := jobOf(nl, "silent-1")
		return j.State.Ended()
	}, waitFor, tick, "silent task never declared lost")
	var lostAt time.Time
	nl.Read(func(s *state.State) { lostAt = s.Ended["silent-1"] })
	assert.GreaterOrEqual(t, lostAt.Sub(elected), ttl-50*time.Millisecond, "a full TTL of grace after the election")
	tasks, _ := tasksOf(nl, "silent-1")
	assert.Equal(t, structs.TaskLost, tasks[0].State)
	assert.Equal(t, structs.JobFailed, jobOf(nl, "silent-1").State)
	assert.Contains(t, jobOf(nl, "silent-1").Reason, "lost: no heartbeat for")

	// Two more TTLs: the heartbeating task is still running.
	deadline := time.Now().Add(2 * ttl)
	require.Eventually(t, func() bool { return time.Now().After(deadline) }, waitFor, tick)
	tasks, _ = tasksOf(nl, "alive-1")
	assert.Equal(t, structs.TaskRunning, tasks[0].State)
	assert.Equal(t, structs.JobRunning, jobOf(nl, "alive-1").State)
}

// forwardFrom makes s forward heartbeats to the leader in process.
func (c *cluster) forwardFrom(s *server.Server) {
	s.SetForward(func(leaderID, _ string, id structs.TaskID, token string, ev structs.TaskEvent) error {
		for _, o := range c.live() {
			if o.ID() == leaderID {
				return o.Heartbeat(id, token, ev)
			}
		}
		return &server.NotLeaderError{}
	})
}

// One server: tokens are checked, only changes are committed, and an
// ended task's agent is told so.
func TestHeartbeatEvents(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, nil)
	c.seed(st.C64("c1"))
	svc := st.NewJob("svc", "u1").Service(1, 1).CPU(1, 1).Obj()
	svc.ID = "svc-1"
	c.apply(&state.JobSubmit{RequestID: "s", Job: svc, Now: time.Now()})
	l := c.leader()
	require.Eventually(t, func() bool { return jobOf(l, "svc-1").State == structs.JobScheduled }, waitFor, tick)
	tasks, toks := tasksOf(l, "svc-1")
	id, tok := tasks[0].ID, toks[tasks[0].ID]

	assert.ErrorIs(t, l.Heartbeat(id, "wrong", structs.TaskEvent{}), server.ErrBadToken)
	assert.ErrorIs(t, l.Heartbeat("nope-0-a0", tok, structs.TaskEvent{}), server.ErrBadToken)
	assert.ErrorIs(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskStopping}), state.ErrInvalid)

	index := func() uint64 {
		var i uint64
		l.Read(func(s *state.State) { i = s.Index })
		return i
	}
	require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskRunning}))
	tasks, _ = tasksOf(l, "svc-1")
	assert.Equal(t, structs.TaskRunning, tasks[0].State, "committed before Heartbeat returns")
	assert.Equal(t, structs.JobRunning, jobOf(l, "svc-1").State)
	before := index()
	for range 20 {
		require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskRunning}))
		require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{}))
	}
	assert.Equal(t, before, index(), "plain heartbeats commit nothing")
	healthy := true
	require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskRunning, Healthy: &healthy}))
	tasks, _ = tasksOf(l, "svc-1")
	assert.True(t, tasks[0].Healthy)
	assert.Equal(t, before+1, index(), "a health flip is one commit")

	require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 3}))
	tasks, _ = tasksOf(l, "svc-1")
	assert.Equal(t, structs.TaskFailed, tasks[0].State)
	assert.Equal(t, 3, tasks[0].ExitCode)
	// The service replica is placed again as a new task (a new ID and a new
	// token); the old agent's task has ended.
	require.Eventually(t, func() bool {
		ts, _ := tasksOf(l, "svc-1")
		for _, x := range ts {
			if x.ID != id && x.Index == tasks[0].Index && x.State == structs.TaskScheduled {
				return true
			}
		}
		return false
	}, waitFor, tick)
	ts, toks := tasksOf(l, "svc-1")
	for _, x := range ts {
		if x.ID != id {
			assert.NotEqual(t, tok, toks[x.ID])
			assert.ErrorIs(t, l.Heartbeat(x.ID, tok, structs.TaskEvent{}), server.ErrBadToken)
		}
	}
	assert.ErrorIs(t, l.Heartbeat(id, tok, structs.TaskEvent{}), server.ErrTaskEnded)
}

// fakeBackend records what the leader asked of it.
type fakeBackend struct {
	mu       sync.Mutex
	started  map[structs.TaskID]string // task -> token
	stopped  map[structs.TaskID]time.Duration
	launches []backend.Launch
	halts    []backend.Halt
}

func (b *fakeBackend) Start(l backend.Launch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l.Task.Job != l.Job.ID {
		return errors.New("task and job do not match")
	}
	b.started[l.Task.ID] = l.Token
	b.launches = append(b.launches, l)
	return nil
}

func (b *fakeBackend) launched() []backend.Launch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.launches)
}

func (b *fakeBackend) Capabilities() backend.Capabilities { return backend.Capabilities{} }

func (b *fakeBackend) Stop(h backend.Halt) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped[h.Task] = h.Grace
	b.halts = append(b.halts, h)
	return nil
}

func (b *fakeBackend) halted() []backend.Halt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.halts)
}

func (b *fakeBackend) seen(id structs.TaskID) (token string, started bool, grace time.Duration, stopped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	token, started = b.started[id]
	grace, stopped = b.stopped[id]
	return
}

// The leader starts what it placed and stops what is stopping; Why explains
// pending jobs; retention removes ended jobs.
func TestBackendWhyAndRetention(t *testing.T) {
	t.Parallel()
	var now atomic.Pointer[time.Time]
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now.Store(&t0)
	c := newCluster(t, 1, func(cfg *server.Config) {
		cfg.Clock = func() time.Time { return *now.Load() }
		cfg.Retention = time.Second
		cfg.StopGrace = 7 * time.Second
	})
	b := &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}}
	l := c.leader()
	l.SetBackend(b)
	c.seed(st.C64("c1"))

	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: t0})
	big := st.NewJob("big", "u1").CPU(64, 1).Obj()
	big.ID = "big-1"
	c.apply(&state.JobSubmit{RequestID: "b", Job: big, Now: t0})
	require.Eventually(t, func() bool { return jobOf(l, "a-1").State == structs.JobScheduled }, waitFor, tick)
	tasks, toks := tasksOf(l, "a-1")
	id := tasks[0].ID
	require.Eventually(t, func() bool { _, ok, _, _ := b.seen(id); return ok }, waitFor, tick, "never started")
	tok, _, _, _ := b.seen(id)
	assert.Equal(t, toks[id], tok)

	require.Eventually(t, func() bool { return l.Why("big-1") != nil }, waitFor, tick)
	assert.False(t, l.Why("big-1").NeverFits)
	assert.NotEmpty(t, l.Why("big-1").Message)
	assert.Nil(t, l.Why("a-1"))

	c.apply(&state.JobCancel{ID: "a-1", Now: t0})
	require.Eventually(t, func() bool { _, _, _, ok := b.seen(id); return ok }, waitFor, tick, "never stopped")
	_, _, grace, _ := b.seen(id)
	assert.Equal(t, 7*time.Second, grace)
	require.NoError(t, l.Heartbeat(id, tok, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 143}))
	assert.ErrorIs(t, l.Heartbeat(id, tok, structs.TaskEvent{}), server.ErrTaskEnded)
	require.Eventually(t, func() bool { return jobOf(l, "big-1").State == structs.JobScheduled }, waitFor, tick,
		"the freed node takes the waiting job")

	t1 := t0.Add(2 * time.Second)
	now.Store(&t1)
	require.Eventually(t, func() bool { return jobOf(l, "a-1") == nil }, waitFor, tick, "ended job never expired")
	assert.NotNil(t, jobOf(l, "big-1"))
}

// counter finds a metric family's single value in s's registry.
func counter(t *testing.T, s *server.Server, name string) float64 {
	t.Helper()
	mfs, err := s.Metrics().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A new leader does not start the tasks an earlier leader placed: that one
// may have started them on its own backend just before it went (a local
// process the new leader cannot see), and starting them again would run
// the allocation twice (found by make chaos). One that never started is
// declared Lost after the heartbeat TTL and its job placed again, as a new
// allocation the new leader starts; the job does not fail.
func TestNewLeaderDoesNotStartInheritedTasks(t *testing.T) {
	t.Parallel()
	const ttl = 400 * time.Millisecond
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.HeartbeatTTL = ttl })
	c.seed(st.C64("c1"))
	old := c.leader() // no backend: it places and starts nothing
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	require.Eventually(t, func() bool { return jobOf(old, "a-1").State == structs.JobScheduled }, waitFor, tick)
	first, _ := tasksOf(old, "a-1")
	require.Len(t, first, 1)
	backends := map[string]*fakeBackend{}
	for _, s := range c.live() {
		if s != old {
			backends[s.ID()] = &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}}
			s.SetBackend(backends[s.ID()])
		}
	}
	c.stop(c.index(old))
	nl := c.leader()
	b := backends[nl.ID()]
	var second *structs.Task
	require.Eventually(t, func() bool {
		ts, _ := tasksOf(nl, "a-1")
		for _, tk := range ts {
			if tk.Attempt == 1 {
				second = tk
			}
		}
		return second != nil
	}, waitFor, tick, "the job is never placed again")
	require.Eventually(t, func() bool { _, ok, _, _ := b.seen(second.ID); return ok }, waitFor, tick, "the new allocation is never started")
	for _, fb := range backends {
		_, started, _, _ := fb.seen(first[0].ID)
		assert.False(t, started, "the inherited task was started again")
	}
	ts, _ := tasksOf(nl, "a-1")
	assert.Equal(t, structs.TaskLost, ts[0].State)
	j := jobOf(nl, "a-1")
	assert.Equal(t, 1, j.LostUnstarted, "requeued: replica 0 was lost before it started")
	assert.False(t, j.State.Ended())
}

// A server may advertise another Raft address than the one it listens on
// (a proxy or NAT in front of it): the configuration lists the advertised
// one.
func TestRaftAdvertise(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adv := ln.Addr().String()
	ln.Close()
	c := newCluster(t, 1, func(cfg *server.Config) { cfg.RaftAdvertise = adv })
	l := c.leader()
	assert.Equal(t, adv, l.RaftAddr())
	peers, err := l.Peers()
	require.NoError(t, err)
	require.Len(t, peers, 1)
	assert.Equal(t, adv, peers[0].RaftAddr)
	_, err = server.New(server.Config{ID: "x", RaftAddr: "127.0.0.1:0", RaftAdvertise: "no-port", DataDir: t.TempDir()})
	assert.ErrorContains(t, err, `raft advertise address "no-port"`)
}

// A backend's Start gets the whole launch from the leader's read of the
// state: the task, its job and token, a gang job's gang (whole while its
// tasks are Scheduled or Running) and the cluster of the task's node; its
// Stop gets the task, the stop grace and the cluster as well. It need not
// read the server's state.
func TestLaunchRecord(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, func(cfg *server.Config) { cfg.StopGrace = 7 * time.Second })
	b := &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}}
	l := c.leader()
	l.SetBackend(b)
	c.apply(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "east", Redis: "10.0.0.9:6379"}})
	for _, n := range []string{"c1", "c2"} {
		node := st.C64(n)
		node.Cluster = "east"
		c.seed(node)
	}
	gang := st.NewJob("mpi", "u1").CPU(60, 1).MPI(2).Obj()
	gang.ID = "mpi-1"
	c.apply(&state.JobSubmit{RequestID: "g", Job: gang, Now: time.Now()})
	require.Eventually(t, func() bool { return len(b.launched()) == 2 }, waitFor, tick, "the gang never started")
	tasks, toks := tasksOf(l, "mpi-1")
	require.Len(t, tasks, 2)
	ids := []structs.TaskID{tasks[0].ID, tasks[1].ID}
	for _, la := range b.launched() {
		assert.Equal(t, structs.JobID("mpi-1"), la.Job.ID)
		assert.Equal(t, toks[la.Task.ID], la.Token)
		assert.ElementsMatch(t, ids, la.Gang, "the gang's tasks")
		assert.True(t, la.GangWhole)
		require.NotNil(t, la.Cluster)
		assert.Equal(t, "10.0.0.9:6379", la.Cluster.Redis)
		members, whole := la.Members()
		assert.ElementsMatch(t, ids, members)
		assert.True(t, whole)
	}

	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	require.Eventually(t, func() bool { return len(b.launched()) == 3 }, waitFor, tick, "the job never started")
	la := b.launched()[2]
	assert.Nil(t, la.Gang, "no gang job: no gang")
	members, whole := la.Members()
	assert.Equal(t, []structs.TaskID{la.Task.ID}, members)
	assert.True(t, whole)

	c.apply(&state.JobCancel{ID: "a-1", Now: time.Now()})
	require.Eventually(t, func() bool { return len(b.halted()) == 1 }, waitFor, tick, "the job never stopped")
	h := b.halted()[0]
	assert.Equal(t, la.Task.ID, h.Task)
	assert.Equal(t, 7*time.Second, h.Grace)
	require.NotNil(t, h.Cluster)
	assert.Equal(t, structs.ClusterID("east"), h.Cluster.Name)
}
