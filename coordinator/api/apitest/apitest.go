// Package apitest runs the coordinator's HTTP API over the real state
// machine for tests: Store applies each command to an fsm.FSM as the next
// Raft log entry, synchronously, and Env serves the API over it on an
// httptest.Server with a fixed clock and a user token per user.
package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// ErrBadToken is what Store.Heartbeat returns for a token that is not the
// task's allocation token.
var ErrBadToken = errors.New("invalid allocation token")

// Store is an api.Store over a real fsm.FSM. Apply encodes each command
// and applies it as the next log entry, as Raft's apply goroutine would;
// the result and domain error come back as the Raft server returns them.
type Store struct {
	FSM *fsm.FSM

	mu    sync.Mutex // serialises Apply and guards the fields below
	index uint64
	whys  map[structs.JobID]*sched.Why
	fail  error
	log   [][]byte // every entry applied
}

// NewStore returns a Store over an empty state.
func NewStore() *Store { return &Store{FSM: fsm.New(), whys: map[structs.JobID]*sched.Why{}} }

var _ api.Store = (*Store)(nil)

// Apply applies c as the next log entry. After FailWith(err) it applies
// nothing and returns err, as a server that lost its leadership would.
func (s *Store) Apply(_ context.Context, c state.Command) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	return s.applyLocked(c)
}

func (s *Store) applyLocked(c state.Command) (any, error) {
	b, err := state.Encode(c)
	if err != nil {
		return nil, err
	}
	s.index++
	s.log = append(s.log, b)
	r := s.FSM.Apply(&raft.Log{Type: raft.LogCommand, Data: b, Index: s.index}).(fsm.Response)
	return r.Result, r.Err
}

// Log returns the entries applied so far, as Raft's log would hold them.
func (s *Store) Log() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// Read reads the FSM's state.
func (s *Store) Read(fn func(*state.State)) { s.FSM.Read(fn) }

// Why returns the reasons the last Schedule recorded for job id.
func (s *Store) Why(id structs.JobID) *sched.Why {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whys[id]
}

// Heartbeat checks token as the Raft server does and commits the event as
// a TaskUpdate; a plain heartbeat (no state) changes nothing.
func (s *Store) Heartbeat(id structs.TaskID, token string, ev structs.TaskEvent) error {
	var want string
	s.Read(func(st *state.State) { want = st.Tokens[id] })
	if want == "" || want != token {
		return fmt.Errorf("heartbeat for task %s: %w", id, ErrBadToken)
	}
	if ev.State == "" {
		return nil
	}
	ev.Task = id
	_, err := s.Apply(context.Background(), &state.TaskUpdate{Events: []structs.TaskEvent{ev}})
	return err
}

// FailWith makes every later Apply return err without applying (nil
// restores normal operation).
func (s *Store) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Applied returns how many commands were applied (the last log index).
func (s *Store) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index
}

// Must applies c and fails t on a domain error.
func (s *Store) Must(t testing.TB, c state.Command) any {
	t.Helper()
	res, err := s.Apply(context.Background(), c)
	require.NoError(t, err, "apply %T", c)
	return res
}

// Load applies a cluster config (structs.ParseClusterConfig): clusters,
// pools, nodes, quotas, then the fair-share settings.
func (s *Store) Load(t testing.TB, config string) {
	t.Helper()
	cfg, err := structs.ParseClusterConfig([]byte(config))
	require.NoError(t, err)
	for i := range cfg.Clusters {
		s.Must(t, &state.ClusterUpsert{Cluster: &cfg.Clusters[i]})
	}
	for i := range cfg.Pools {
		if cfg.Pools[i].Name != structs.PublicPool {
			s.Must(t, &state.PoolUpsert{Pool: &cfg.Pools[i]})
		}
	}
	for i := range cfg.Nodes {
		s.Must(t, &state.NodeUpsert{Node: &cfg.Nodes[i]})
	}
	for i := range cfg.Quotas {
		s.Must(t, &state.QuotaSet{Quota: &cfg.Quotas[i]})
	}
	if cfg.FairShare != nil {
		s.Must(t, &state.FairShareSet{FairShare: cfg.FairShare})
	}
}

// Schedule runs one scheduling cycle as the leader does: it plans over a
// snapshot, records the why-pending reasons, and commits the plan with a
// fresh random allocation token for every new task.
func (s *Store) Schedule(t testing.TB, now time.Time) state.CommitResult {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap *sched.Snapshot
	var pending []*structs.Job
	s.Read(func(st *state.State) { snap, pending = st.Snapshot(), st.Pending() })
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: snap.Index})
	s.whys = maps.Clone(plan.Pending)
	if s.whys == nil {
		s.whys = map[structs.JobID]*sched.Why{}
	}
	plan.Pending = nil
	tokens := map[structs.TaskID]string{}
	for i := range plan.Placements {
		pl := &plan.Placements[i]
		for k := range pl.Tasks {
			tp := &pl.Tasks[k]
			tp.ID = s.freeTaskID(pl.Job, tp.Index, snap.Jobs[pl.Job].Attempt)
			tokens[tp.ID] = NewToken()
		}
	}
	res, err := s.applyLocked(&state.PlanCommit{Plan: plan, Now: now, Tokens: tokens})
	require.NoError(t, err)
	return res.(state.CommitResult)
}

// Report commits a task event, as the leader does for heartbeats.
func (s *Store) Report(t testing.TB, id structs.TaskID, ts structs.TaskState, now time.Time) {
	t.Helper()
	s.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: id, State: ts, Time: now}}})
}

// Tokens returns a copy of the allocation tokens by task.
func (s *Store) Tokens() map[structs.TaskID]string {
	var out map[structs.TaskID]string
	s.Read(func(st *state.State) { out = maps.Clone(st.Tokens) })
	return out
}

// Tasks returns job id's tasks.
func (s *Store) Tasks(id structs.JobID) []*structs.Task {
	var out []*structs.Task
	s.Read(func(st *state.State) { out = st.TasksOf(id) })
	return out
}

// Job returns job id, or nil.
func (s *Store) Job(id structs.JobID) *structs.Job {
	var out *structs.Job
	s.Read(func(st *state.State) { out = st.Jobs[id] })
	return out
}

// StateJSON returns the state as JSON without its log index, so a refused
// command (which still advances the index) compares equal to no command.
func (s *Store) StateJSON(t testing.TB) string {
	t.Helper()
	var b []byte
	var err error
	s.Read(func(st *state.State) {
		c := *st
		c.Index = 0
		b, err = json.Marshal(&c)
	})
	require.NoError(t, err)
	return string(b)
}

// NewToken returns a random 32-character hex token.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// T0 is the Env's clock: every command it makes carries this time.
var T0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Cluster is a small deployment: one local cluster; a project pool
// "perception" (members u1 and m1) with one A100 node; a public A100 node
// and a CPU node; quotas for u1, u2 and the project.
const Cluster = `
clusters: [{name: local}]
pools:
- {name: perception, project: perception, members: [u1, m1], lendIdle: true}
nodes:
- {name: g1, pool: perception, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}, tags: {A100: ""}}
- {name: g2, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}, tags: {A100: ""}}
- {name: c1, cpu: 64, memory: 256Gi}
quotas:
- {scope: "user:u1", limits: {gpu/A100: 8, cpu: 32, memory: 128Gi}}
- {scope: "user:u2", limits: {gpu/A100: 8, cpu: 32, memory: 128Gi}}
- {scope: "project:perception", limits: {gpu/A100: 8}}
`

// Users of an Env: u1 and m1 are members of project perception, u2 is
// not, admin is an admin.
var Users = []api.User{{Name: "u1"}, {Name: "u2"}, {Name: "m1"}, {Name: "admin", Admin: true}}

// Env is the API over a Store on an httptest.Server.
type Env struct {
	Store     *Store
	Server    *httptest.Server
	Tokens    map[structs.UserID]string // user token by user
	tokenFile api.TokenFile
	Metrics   *prometheus.Registry
	Keyring   *keyring.Keyring // seals the API's secrets
	// KeyringFile is Keyring's file: one key, k1.
	KeyringFile []byte
}

// NewEnv serves the API over a new Store loaded with config (Cluster when
// empty) for Users, with the clock fixed at T0 and job IDs name-00001,
// name-00002, ... The server closes when the test ends.
func NewEnv(t testing.TB, config string) *Env {
	t.Helper()
	if config == "" {
		config = Cluster
	}
	e := &Env{Store: NewStore(), Tokens: map[structs.UserID]string{}, Metrics: prometheus.NewRegistry()}
	var err error
	e.KeyringFile, err = keyring.Generate("k1")
	require.NoError(t, err)
	e.Keyring, err = keyring.Parse(e.KeyringFile)
	require.NoError(t, err)
	e.Store.Load(t, config)
	var tf api.TokenFile
	for _, u := range Users {
		u.Token = "token-" + string(u.Name) + "-" + NewToken()
		e.Tokens[u.Name] = u.Token
		tf.Users = append(tf.Users, u)
	}
	e.tokenFile = tf
	e.serve(t)
	return e
}

func (e *Env) serve(t testing.TB) {
	var n atomic.Int64
	h := api.New(e.Store, api.Config{
		Tokens:  e.tokenFile,
		Clock:   func() time.Time { return T0 },
		NewID:   func(name string) string { return fmt.Sprintf("%s-%05d", name, n.Add(1)) },
		Metrics: e.Metrics,
		Keyring: e.Keyring,
	})
	e.Server = httptest.NewServer(h)
	t.Cleanup(e.Server.Close)
}

// WithKeyring serves another API over the same store and users with
// keyring k (nil: none), as another server of the cluster would.
func (e *Env) WithKeyring(t testing.TB, k *keyring.Keyring) *Env {
	t.Helper()
	o := *e
	o.Keyring, o.KeyringFile = k, nil
	o.Metrics = prometheus.NewRegistry()
	o.serve(t)
	return &o
}

// PutConfig creates or updates (at the next version) the config or
// secret id with data straight through the store, a secret's values
// sealed with the Env's keyring as the API seals them.
func (e *Env) PutConfig(t testing.TB, id structs.ConfigID, data structs.ConfigData) {
	t.Helper()
	version := 1
	e.Store.Read(func(st *state.State) {
		if o := st.Config(id); o != nil {
			version = o.Current().Version + 1
		}
	})
	put := &state.ConfigPut{ID: id, Create: version == 1, Version: version, Keys: data.Keys(), By: "u1", Now: T0}
	if id.Kind == structs.ConfigKindSecret {
		put.Digest, put.Sealed = e.Keyring.Digest(data), e.Keyring.Seal(data.Encode(), keyring.AAD(id, version))
	} else {
		put.Digest, put.Data = data.Digest(), data
	}
	e.Store.Must(t, put)
}

// URL returns the server's base URL.
func (e *Env) URL() string { return e.Server.URL }

// freeTaskID names a new task deterministically: replica and attempt,
// with "-rN" added when a task of that name exists (a replica placed
// again).
func (s *Store) freeTaskID(j structs.JobID, index, attempt int) structs.TaskID {
	id := structs.MakeTaskID(j, index, attempt)
	for n := 1; ; n++ {
		taken := false
		s.Read(func(st *state.State) { taken = st.Tasks[id] != nil })
		if !taken {
			return id
		}
		id = structs.TaskID(fmt.Sprintf("%s-r%d", structs.MakeTaskID(j, index, attempt), n))
	}
}
