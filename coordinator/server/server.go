// Package server runs one coordinator server: a Raft peer (raft-boltdb log
// and stable store, file snapshots, TCP transport) over the coordinator's
// state machine (coordinator/fsm), and, while it leads, the leader
// components (leader.go): liveness, the backend driver, the cache
// warm-ups, the scheduling cycle, retention and fair-share usage, each
// with its own state and lock.
//
//	            ┌──────────── every server ────────────┐
//	client ──▶  Apply ──▶ raft.Apply ──▶ fsm.Apply ──▶ state.State
//	            Read  ─────────────────────────────────▲
//	            Heartbeat, Report ─(follower: forward)──▶ leader
//	            └──────────────────────────────────────┘
//	leader only (after a Barrier): cycle ─▶ PlanCommit ─▶ warm-ups, backend
//	                               liveness ─▶ TaskUpdate (changes only)
//	                               retention ─▶ JobsExpire
//
// The HTTP layer sits on top: it forwards writes that get a
// *NotLeaderError and retries those that get ErrOutcomeUnknown with the
// same request ID.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// Defaults for the zero values of Config.
const (
	DefaultHeartbeatTTL       = 15 * time.Second
	DefaultCycle              = 200 * time.Millisecond
	DefaultRetention          = 7 * 24 * time.Hour
	DefaultUsageEvery         = 30 * time.Second
	DefaultStopGrace          = 30 * time.Second
	DefaultHeartbeatTimeout   = 300 * time.Millisecond
	DefaultElectionTimeout    = 300 * time.Millisecond
	DefaultLeaderLeaseTimeout = 150 * time.Millisecond
)

// Config configures one server. Zero durations take the defaults above.
type Config struct {
	// ID is the server's Raft ID, unique and stable across restarts.
	ID string
	// RaftAddr is the host:port the Raft TCP transport binds and
	// advertises. Port 0 picks a free port (see Server.RaftAddr); a
	// restarted server must get the address it had.
	RaftAddr string
	// RaftAdvertise, if set, is the host:port the other servers dial to
	// reach this one's Raft transport instead of RaftAddr (a NAT, a proxy,
	// a Kubernetes Service in front of it). It must be a resolvable IP
	// address and port, and stable across restarts.
	RaftAdvertise string
	// TLS, if set, runs the Raft transport over mutual TLS (see LoadTLS):
	// only peers with a certificate from its CA take part.
	TLS *tls.Config
	// DataDir holds raft.db (log and stable store) and the snapshots.
	DataDir string
	// Bootstrap makes a new single-server cluster when DataDir holds no
	// Raft state yet. Other servers then join it.
	Bootstrap bool
	// Join lists HTTP addresses of existing servers. A server without Raft
	// state calls JoinFunc on them in turn until one adds it.
	Join []string
	// JoinFunc asks the server at addr (one of Join) to add this server as
	// a voter; on that server the HTTP layer calls AddVoter. Required when
	// Join is set. An error with a Permanent() bool method that returns
	// true stops the asking (see JoinFailed); others are retried.
	JoinFunc func(ctx context.Context, addr, id, raftAddr string) error

	// HeartbeatTTL is how long a task may stay silent before it is Lost.
	HeartbeatTTL time.Duration
	// Cycle is the scheduling period; new submissions and task events wake
	// the loop early.
	Cycle time.Duration
	// Retention is how long ended jobs are kept in state.
	Retention time.Duration
	// UsageEvery is how often the leader accrues fair-share usage
	// (DefaultUsageEvery).
	UsageEvery time.Duration
	// StopGrace is the grace period the backend gives a task it stops.
	StopGrace time.Duration
	// CacheCheckTTL is how long the leader trusts a cluster cache's answer
	// about a dataset; CacheCheckTimeout bounds one cycle's wait for
	// answers (defaults DefaultCacheCheckTTL, DefaultCacheCheckTimeout).
	CacheCheckTTL     time.Duration
	CacheCheckTimeout time.Duration
	// WarmUpRetryFor is how long a cache warm-up that cannot reach a
	// Redis tries again, with backoff, before it fails
	// (DefaultWarmUpRetryFor).
	WarmUpRetryFor time.Duration
	// Clock gives the time put into commands; time.Now when nil.
	Clock func() time.Time
	// Logger receives the server's and Raft's logs; slog.Default when nil.
	Logger *slog.Logger

	// Raft timing, tuned for a LAN.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is how many log entries trigger a snapshot (Raft's
	// default when zero).
	SnapshotThreshold uint64
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTTL, DefaultHeartbeatTTL)
	def(&c.Cycle, DefaultCycle)
	def(&c.Retention, DefaultRetention)
	def(&c.UsageEvery, DefaultUsageEvery)
	def(&c.StopGrace, DefaultStopGrace)
	def(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	def(&c.ElectionTimeout, DefaultElectionTimeout)
	def(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	def(&c.CacheCheckTTL, DefaultCacheCheckTTL)
	def(&c.CacheCheckTimeout, DefaultCacheCheckTimeout)
	def(&c.WarmUpRetryFor, DefaultWarmUpRetryFor)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ForwardFunc sends a heartbeat that reached a follower to the leader
// (leaderID, at Raft address leaderAddr); the HTTP layer maps the ID to the
// leader's HTTP address.
type ForwardFunc func(leaderID, leaderAddr string, taskID structs.TaskID, token string, ev structs.TaskEvent) error

// Server is one coordinator server. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	fsm     *fsm.FSM
	raft    *raft.Raft
	trans   *raft.NetworkTransport
	store   *raftboltdb.BoltStore
	metrics *metrics
	obs     *raft.Observer

	shutdownCh chan struct{}
	joinFailed chan error // joinLoop's permanent refusal (JoinFailed)
	shutdown   sync.Once
	wg         sync.WaitGroup // background goroutines

	bootstrapped bool // this start made a new cluster (set before New returns)

	// The leader components (leaderwork.go), each with its own state and
	// lock, and those added from outside (AddLeaderWork).
	live       *heartbeats
	backend    *driver
	warm       *warmups
	sched      *scheduler
	components leaderComponents
}

// New opens (or creates) the server's Raft state in cfg.DataDir and starts
// it: bootstrapping, joining or restarting as cfg and the data dir say.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	switch {
	case cfg.ID == "":
		return nil, errors.New("new server: an ID is required")
	case cfg.DataDir == "":
		return nil, errors.New("new server: a data dir is required")
	case cfg.Bootstrap && len(cfg.Join) > 0:
		return nil, errors.New("new server: bootstrap and join are exclusive: bootstrap one server, join the others")
	case len(cfg.Join) > 0 && cfg.JoinFunc == nil:
		return nil, errors.New("new server: join addresses need a JoinFunc")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("new server: create data dir: %w", err)
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger.With("server", cfg.ID),
		fsm:        fsm.New(),
		metrics:    newMetrics(),
		shutdownCh: make(chan struct{}),
		joinFailed: make(chan error, 1),
	}
	s.live = &heartbeats{s: s}
	s.backend = newDriver(s)
	s.warm = &warmups{s: s}
	s.sched = newScheduler(s)
	// Established in this order, liveness first: every task gets a full
	// TTL from the term's start, and the backend's heartbeats reach it.
	for _, c := range []leaderComponent{s.live, s.backend, s.warm, s.sched, workFunc(s.retention), workFunc(s.accrueUsage)} {
		s.components.add(c)
	}
	s.fsm.OnApply = s.onApply
	if err := s.openRaft(); err != nil {
		s.closeStores()
		return nil, err
	}
	s.metrics.register(s)
	s.watchLeader()
	s.wg.Add(1)
	go s.monitorLeadership()
	return s, nil
}

// openRaft wires the stores, transport and Raft, and bootstraps.
func (s *Server) openRaft() error {
	cfg := s.cfg
	rlog := newHCLogger(s.log.With("component", "raft"), "raft")
	store, err := openStore(cfg.DataDir)
	var inUse *DataDirInUseError
	if errors.As(err, &inUse) {
		return err
	}
	if err != nil {
		return fmt.Errorf("open raft store: %w", err)
	}
	s.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rlog)
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	var advertise net.Addr
	if cfg.RaftAdvertise != "" {
		if advertise, err = raftAdvertise(cfg.RaftAdvertise); err != nil {
			return err
		}
	}
	var trans *raft.NetworkTransport
	if name, ok := advertise.(nameAddr); ok && cfg.TLS == nil {
		trans, err = newNamedTCPTransport(cfg.RaftAddr, name, s)
	} else if cfg.TLS != nil {
		trans, err = newTLSTransport(cfg.RaftAddr, advertise, cfg.TLS, rlog)
	} else {
		trans, err = raft.NewTCPTransportWithLogger(cfg.RaftAddr, advertise, 3, 10*time.Second, rlog)
	}
	if err != nil {
		return fmt.Errorf("listen on raft address %s: %w", cfg.RaftAddr, err)
	}
	s.trans = trans

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = rlog
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.BatchApplyCh = true // group concurrent Applies into one append
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}

	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	if cfg.Bootstrap && !has {
		conf := raft.Configuration{Servers: []raft.Server{{
			Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr(),
		}}}
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans, conf); err != nil {
			return fmt.Errorf("bootstrap cluster: %w", err)
		}
		s.log.Info("bootstrapped a new cluster", "raftAddr", trans.LocalAddr())
		s.bootstrapped = true
	}
	r, err := raft.NewRaft(rc, s.fsm, store, store, snaps, trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	s.raft = r
	if !has && len(cfg.Join) > 0 {
		s.wg.Add(1)
		go s.joinLoop()
	}
	return nil
}

// joinLoop asks the servers in cfg.Join, in turn, to add this one, until
// one does or the server shuts down, with backoff between rounds. An
// error with a Permanent method that says true (a certificate the peer
// refuses, another secret) ends it: JoinFailed then delivers the error.
func (s *Server) joinLoop() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 100 * time.Millisecond
	for {
		for _, addr := range s.cfg.Join {
			err := s.cfg.JoinFunc(ctx, addr, s.cfg.ID, s.RaftAddr())
			if err == nil {
				s.log.Info("joined the cluster", "via", addr)
				return
			}
			var p interface{ Permanent() bool }
			if errors.As(err, &p) && p.Permanent() {
				s.log.Error("join refused: asking again cannot help", "via", addr, "err", err)
				s.joinFailed <- err
				return
			}
			s.log.Warn("join failed, retrying", "via", addr, "err", err)
		}
		select {
		case <-s.shutdownCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// JoinFailed delivers the error that ended joining for good (see
// Config.JoinFunc); nothing comes while joining goes on, or after it
// succeeded.
func (s *Server) JoinFailed() <-chan error { return s.joinFailed }

// RaftAddr returns the address the other servers reach this one's Raft
// transport at: Config.RaftAdvertise if set, else the one it listens on.
func (s *Server) RaftAddr() string { return string(s.trans.LocalAddr()) }

// Bootstrapped reports whether this start created a new cluster (its data
// dir held no Raft state and Bootstrap was set).
func (s *Server) Bootstrapped() bool { return s.bootstrapped }

// ID returns the server's Raft ID.
func (s *Server) ID() string { return s.cfg.ID }

// IsLeader reports whether this server is the Raft leader now.
func (s *Server) IsLeader() bool { return s.raft.State() == raft.Leader }

// LeadingSince returns when this server's current term of leader work
// began (its clock, after catching up with earlier terms) and true, or
// false when it does not lead. After a leader change every task gets a
// full HeartbeatTTL from then before it is declared lost (C20): whatever
// else declares tasks lost on the leader (a Kubernetes node's NotReady
// grace) waits for it too.
func (s *Server) LeadingSince() (time.Time, bool) {
	l := s.live.current()
	if l == nil || !s.IsLeader() {
		return time.Time{}, false
	}
	return l.electedAt, true
}

// HeartbeatTTL is how long a task may stay silent before it is lost.
func (s *Server) HeartbeatTTL() time.Duration { return s.cfg.HeartbeatTTL }

// Authoritative reports whether this server's state is the cluster's
// latest: it leads and has applied everything committed before its term
// (its leader work runs). A follower's state may lag the leader's.
func (s *Server) Authoritative() bool {
	return s.live.current() != nil && s.IsLeader()
}

// VerifyLeader confirms with a quorum that this server still leads: a
// leader cut off from the others may not know yet that another has been
// elected. It returns a *NotLeaderError when it does not lead.
func (s *Server) VerifyLeader(ctx context.Context) error {
	if err := s.wait(ctx, s.raft.VerifyLeader()); err != nil {
		return fmt.Errorf("verify leadership: %w", s.mapRaftErr(err))
	}
	return nil
}

// Leader returns the current leader's ID and Raft address, or empty
// strings when none is known.
func (s *Server) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// Read calls fn with the replicated state under the FSM's read lock: see
// fsm.FSM.Read for what fn may keep. On a follower the state may lag the
// leader's by the replication delay.
func (s *Server) Read(fn func(*state.State)) { s.fsm.Read(fn) }

// AddVoter adds server id at raftAddr as a voter. Only the leader can; a
// follower returns a *NotLeaderError. Re-adding a member with the same ID
// and address succeeds; a member that changed address is replaced.
func (s *Server) AddVoter(id, raftAddr string) error {
	if !s.IsLeader() {
		return s.notLeader()
	}
	cf := s.raft.GetConfiguration()
	if err := s.wait(context.Background(), cf); err != nil {
		return fmt.Errorf("add voter %s: read configuration: %w", id, s.mapRaftErr(err))
	}
	for _, m := range cf.Configuration().Servers {
		if m.ID == raft.ServerID(id) && m.Address == raft.ServerAddress(raftAddr) {
			return nil
		}
		if m.ID == raft.ServerID(id) || m.Address == raft.ServerAddress(raftAddr) {
			if err := s.wait(context.Background(), s.raft.RemoveServer(m.ID, 0, 0)); err != nil {
				return fmt.Errorf("add voter %s: remove stale member %s at %s: %w", id, m.ID, m.Address, s.mapRaftErr(err))
			}
		}
	}
	if err := s.wait(context.Background(), s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, 0)); err != nil {
		return fmt.Errorf("add voter %s at %s: %w", id, raftAddr, s.mapRaftErr(err))
	}
	s.log.Info("added voter", "id", id, "raftAddr", raftAddr)
	return nil
}

// Peer is one member of the Raft configuration.
type Peer struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
}

// Peers lists the members of the latest Raft configuration this server
// knows (on a follower it may lag).
func (s *Server) Peers() ([]Peer, error) {
	cf := s.raft.GetConfiguration()
	if err := s.wait(context.Background(), cf); err != nil {
		return nil, fmt.Errorf("read raft configuration: %w", err)
	}
	leader, _ := s.Leader()
	var out []Peer
	for _, m := range cf.Configuration().Servers {
		out = append(out, Peer{ID: string(m.ID), RaftAddr: string(m.Address), Voter: m.Suffrage == raft.Voter, Leader: string(m.ID) == leader})
	}
	return out, nil
}

// Snapshot asks Raft for a snapshot now (it also takes them on its own).
func (s *Server) Snapshot() error {
	if err := s.wait(context.Background(), s.raft.Snapshot()); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// Metrics returns the registry holding the server's Prometheus metrics.
func (s *Server) Metrics() *prometheus.Registry { return s.metrics.reg }

// Shutdown stops leader work and Raft (no leadership transfer: the other
// servers elect a new leader after their heartbeat timeout) and closes the
// stores. It is safe to call more than once.
func (s *Server) Shutdown() error {
	var err error
	s.shutdown.Do(func() {
		close(s.shutdownCh)
		if e := s.raft.Shutdown().Error(); e != nil {
			err = fmt.Errorf("shut down raft: %w", e)
		}
		s.wg.Wait()
		s.raft.DeregisterObserver(s.obs)
		err = errors.Join(err, s.closeStores())
		s.log.Info("server stopped")
	})
	return err
}

func (s *Server) closeStores() error {
	var errs []error
	if s.trans != nil {
		errs = append(errs, s.trans.Close())
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}

// onApply runs after every applied command on every server: commands that
// can make work placeable wake the scheduling loop (only a leader reads it).
func (s *Server) onApply(_ uint64, c state.Command, _ fsm.Response) {
	switch c.(type) {
	case *state.PlanCommit, *state.JobsExpire:
		return
	}
	s.wake()
}

// wake asks the scheduling loop for a cycle soon, without blocking.
func (s *Server) wake() { s.sched.wake() }

func (s *Server) now() time.Time { return s.cfg.Clock() }
