// Package daemon assembles a running coordinator: the Raft server, the
// HTTP API (with writes forwarded to the leader), the task backend and the
// initial cluster config. `coordinator server` and `coordinator dev` are
// thin flag layers over Run.
package daemon

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/coordinator/ui"
	"github.com/atom-sched/atom/pkg/plugin/plugindir"
	"github.com/atom-sched/atom/pkg/structs"
)

// Config configures one coordinator process.
type Config struct {
	Server server.Config // ID, RaftAddr, DataDir, Bootstrap, Join (HTTP URLs), timings
	// HTTPAddr is the host:port the API listens on (port 0: any free port).
	HTTPAddr string
	// HTTPReadTimeout bounds reading one request, body included (default
	// a minute; a spec is at most 1 MiB); HTTPIdleTimeout closes a
	// connection idle between requests (default two minutes). So stalled
	// or idle clients cannot hold connections for ever. There is no write
	// timeout: logs -f streams.
	HTTPReadTimeout, HTTPIdleTimeout time.Duration
	// Advertise is the URL other servers and tasks use to reach this one;
	// derived from the listener when empty.
	Advertise string
	// Peers maps every server's ID to its HTTP URL (for forwarding to the
	// leader). This server is added automatically.
	Peers map[string]string
	// Secret authenticates servers to each other; required with peers.
	Secret string
	// TLS, when set, serves the API over HTTPS and runs Raft and the
	// server-to-server requests over mutual TLS (see TLSFiles).
	TLS    TLSFiles
	Tokens api.TokenFile
	// Keyring seals and opens secrets' values; nil: the server keeps no
	// secrets (and starts no task that names one).
	Keyring *keyring.Keyring
	// Cluster, if set, is applied once a leader exists: clusters, pools,
	// nodes and quotas (upserts, so applying it again changes nothing).
	Cluster *structs.ClusterConfig
	// TempData: Server.DataDir goes when this process exits (coordinator
	// dev without --data-dir), and the jobs with it.
	TempData bool
	// WorkDir holds the local backend's task directories; default
	// DataDir/work.
	WorkDir string
	// TaskDirSweep is how often the directories of tasks the state no
	// longer has (their jobs expired) are removed; default a minute.
	TaskDirSweep time.Duration
	// Atom is the atom binary the local backend runs each command under;
	// empty runs commands bare (the backend then reports for them).
	Atom string
	// RealGPUs: the local backend's nodes use this machine's GPUs, which
	// atom checks with NVML; otherwise their accelerators are simulated.
	RealGPUs bool
	// GPUFaults are simulated accelerator faults by node name
	// ("2:ecc,3:retired-pages"), for atom's preflight to find.
	GPUFaults map[string]string
	// PluginDir, if set, is passed to every task as ATOM_PLUGIN_DIR: where
	// atom finds external job-type plugins (atom-plugin-KIND).
	PluginDir string
	// JobKinds are the job kinds beyond the built-ins and the plugins of
	// PluginDir (or atom's default directory) that tasks have plugins
	// for: those of the images of kubernetes clusters. A job of any
	// other kind is refused at submit.
	JobKinds []structs.JobKind
	// KubeImage is the image of a kubernetes cluster's task Pods whose
	// job names none; KubeHeartbeatPods makes the coordinator heartbeat
	// for every Running task Pod, for clusters where no atom runs inside
	// them (kwok's, in tests).
	KubeImage         string
	KubeHeartbeatPods bool
	// KubeQPS and KubeBurst are each kubernetes cluster client's rate
	// limits (requests per second, and the burst above it) where the
	// cluster config sets none; 0: DefaultKubeQPS, DefaultKubeBurst.
	KubeQPS, KubeBurst int
	// KubeNodeGrace is how long a kubernetes Node may be not Ready
	// before the tasks on it are declared lost (0: kube.DefaultNodeGrace);
	// KubeSweep how often the leader looks (0: kube.DefaultSweep).
	KubeNodeGrace, KubeSweep time.Duration
	// KubeKeepFinished is how long a task's finished Pod is kept for
	// `job logs` (0: kube.DefaultKeepFinished; negative: deleted at once).
	KubeKeepFinished time.Duration
	Logger           *slog.Logger
}

// Daemon is a running coordinator process.
type Daemon struct {
	Server  *server.Server
	URL     string // this server's API
	httpSrv *http.Server
	backend *LocalBackend
	fw      *forwarder
	kube    func() // closes the kubernetes backends
	cancel  context.CancelFunc
	done    chan struct{}
	seeded  chan struct{} // closed once the cluster config this server seeds is in
	log     *slog.Logger
	// tempData: the data dir, jobs and all, goes when the process exits.
	tempData bool
}

// Start brings a coordinator up and returns once it serves HTTP.
func Start(cfg Config) (*Daemon, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Server.Logger = log
	if err := checkURLs(cfg); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	var caPEM []byte
	if cfg.TLS.enabled() {
		var err error
		if tlsCfg, caPEM, err = cfg.TLS.load(); err != nil {
			return nil, err
		}
		if err := checkCert(cfg, tlsCfg.Certificates[0], caPEM, time.Now()); err != nil {
			return nil, err
		}
		cfg.Server.TLS = tlsCfg
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w%s", cfg.HTTPAddr, err, inUse(err, "--http-addr"))
	}
	url := cfg.Advertise
	if url == "" {
		url = "http://" + ln.Addr().String()
		if tlsCfg != nil {
			url = "https://" + ln.Addr().String()
		}
	}
	if tlsCfg != nil {
		ln = httpsListener(ln, tlsCfg)
	}
	client, logClient := peerClients(tlsCfg)
	if len(cfg.Server.Join) > 0 {
		cfg.Server.JoinFunc = join(client, cfg.Secret, tlsCfg != nil)
	}
	srv, err := server.New(cfg.Server)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w%s", err, inUse(err, "--raft-addr")) // only the Raft transport listens
	}
	peers := map[string]string{cfg.Server.ID: url}
	for id, u := range cfg.Peers {
		peers[id] = u
	}
	fw := &forwarder{srv: srv, peers: peers, secret: cfg.Secret, client: client, logClient: logClient, mtls: tlsCfg != nil}
	srv.SetForward(func(leaderID, _ string, id structs.TaskID, token string, ev structs.TaskEvent) error {
		u, ok := peers[leaderID]
		if !ok {
			return fmt.Errorf("no HTTP address for leader %s", leaderID)
		}
		return forwardHeartbeat(client, u, id, token, ev)
	})

	workDir := cfg.WorkDir
	if workDir == "" {
		workDir = filepath.Join(cfg.Server.DataDir, "work")
	}
	run, err := local.New(local.Config{Dir: workDir})
	if err != nil {
		_ = srv.Shutdown()
		ln.Close()
		return nil, err
	}
	// The task processes an earlier run of this server left running
	// (killed with kill -9) are this one's now: stopped and requeued at
	// shutdown as its own are. They report for themselves (atom).
	if ids := run.Adopt(); len(ids) > 0 {
		log.Info("adopted the task processes an earlier run left running", "tasks", len(ids))
	}
	unmountLeftConfigs(run)
	ttl := cfg.Server.HeartbeatTTL
	if ttl <= 0 {
		ttl = server.DefaultHeartbeatTTL
	}
	addrs := []string{url}
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		if id != cfg.Server.ID {
			addrs = append(addrs, peers[id])
		}
	}
	lb := NewLocalBackend(run, srv, strings.Join(addrs, ","), cfg.Atom, ttl/3, log)
	lb.Simulate, lb.Faults, lb.PluginDir = !cfg.RealGPUs, cfg.GPUFaults, cfg.PluginDir
	lb.CA = string(caPEM)
	lb.Configs = func(t *structs.Task, j *structs.Job) (out []taskenv.Config, err error) {
		srv.Read(func(st *state.State) { out, err = taskenv.Configs(st, cfg.Keyring, t, j) })
		return out, err
	}
	lb.StopAfterDisconnect = ttl // by then no server would count the task alive either
	lb.Grace = cfg.Server.StopGrace
	if lb.Grace <= 0 {
		lb.Grace = server.DefaultStopGrace
	}
	ctx, cancel := context.WithCancel(context.Background())
	be, followNodes, closeKube, err := startKube(ctx, cfg.Cluster, srv, lb, retryApply(fw), strings.Join(addrs, ","), ttl/3, cfg, log)
	if err != nil {
		cancel()
		lb.Close()
		_ = srv.Shutdown()
		ln.Close()
		return nil, err
	}
	srv.SetBackend(be)
	go sweepTaskDirs(ctx, run, fw, cmp.Or(cfg.TaskDirSweep, time.Minute), log)

	// A server that seeds a new cluster is not ready, and does not tell
	// followers its index, until the config is in: a job submitted right
	// after /readyz says 200 must find the config's nodes and quotas.
	seeding := cfg.Cluster != nil && srv.Bootstrapped()
	fw.seeding.Store(seeding)
	mux := http.NewServeMux()
	fw.internal(mux)
	fresh := &freshReads{f: fw, next: api.New(fw, api.Config{Tokens: cfg.Tokens, Metrics: srv.Metrics(), Logs: fw.logSource(run, be, cfg.Server.ID), Volumes: volumesOf(be),
		PodTokens: podTokensOf(be), Keyring: cfg.Keyring, PluginKinds: pluginKinds(cfg)})}
	probes(mux, fw, fresh)
	mux.HandleFunc("GET "+pathLogs+"{id}", fw.auth(fw.serveLogs(run)))
	mux.Handle("/", fresh)
	// The web dashboard, over the same API and tokens (coordinator/ui).
	mux.Handle(ui.Prefix, ui.New(ui.Config{Store: fw, API: fresh, Tokens: cfg.Tokens, CatchUp: func(r *http.Request) error {
		if fresh.done.Load() {
			return nil
		}
		return fresh.catchUp(r) // as the API's reads do: the pages read the state directly
	}}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: cmp.Or(cfg.HTTPReadTimeout, time.Minute), IdleTimeout: cmp.Or(cfg.HTTPIdleTimeout, 2*time.Minute),
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)} // TLS handshake failures, among others
	d := &Daemon{Server: srv, URL: url, httpSrv: hs, backend: lb, fw: fw, kube: closeKube, cancel: cancel, done: make(chan struct{}), seeded: make(chan struct{}), log: log, tempData: cfg.TempData}
	go func() {
		defer close(d.done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	// The cluster config seeds a new cluster only: afterwards the CLI and
	// API own nodes, pools and quotas, and a restart with the same flags
	// must not undo what an admin changed since.
	switch {
	// Kubernetes clusters' nodes are followed once the clusters exist.
	case seeding:
		go func() {
			applyCluster(ctx, fw, cfg.Cluster, log)
			fw.seeding.Store(false)
			close(d.seeded)
			followNodes()
		}()
	case cfg.Cluster != nil:
		log.Info("cluster config not applied: this server did not start a new cluster (change nodes, pools and quotas with the CLI or API)")
		close(d.seeded)
		go followNodes()
	default:
		close(d.seeded)
	}
	log.Info("coordinator serving", "id", cfg.Server.ID, "api", url, "raft", srv.RaftAddr())
	return d, nil
}

// Seeded is closed once the cluster config this server seeds a new
// cluster with is in (at once when it seeds none): `coordinator dev`
// prints how to use it then, not before.
func (d *Daemon) Seeded() <-chan struct{} { return d.seeded }

// Close stops scheduling here, requeues the work this process runs
// (stopLocalTasks), stops its tasks, then serving, and shuts Raft down.
// The tasks stop while the server still takes their reports: a task that
// ends on SIGTERM exits at once, instead of retrying its report to a
// server that is gone until the stop's SIGKILL.
func (d *Daemon) Close() error {
	d.Server.Drain()
	d.stopLocalTasks()
	d.cancel()
	d.backend.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.httpSrv.Shutdown(ctx)
	<-d.done
	d.kube()
	return d.Server.Shutdown()
}

// stopLocalTasks ends, as stopped by this shutdown, the tasks whose
// processes this server runs (those it adopted from an earlier run
// killed with kill -9 included) and, if it leads, the Scheduled tasks of
// local clusters it has not started yet: their jobs are Pending again
// (state.ReasonShutdown), not failed, and run again when a coordinator
// schedules (the next `coordinator dev` on the same data directory). Run
// after Drain, so that nothing is placed or started meanwhile; without a
// leader to take it within a few seconds, the tasks are stopped all the
// same and their ends reported as ever.
func (d *Daemon) stopLocalTasks() {
	ids := map[structs.TaskID]bool{}
	for _, id := range d.backend.run.Running() {
		ids[structs.TaskID(id)] = true
	}
	if d.Server.IsLeader() {
		d.Server.Read(func(st *state.State) {
			for id, t := range st.Tasks {
				if t.State == structs.TaskScheduled && localNode(st, t.Node) {
					ids[id] = true
				}
			}
		})
	}
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	var evs []structs.TaskEvent
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		evs = append(evs, structs.TaskEvent{Task: id, State: structs.TaskLost, Reason: structs.ReasonShutdown, Time: now})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.fw.Apply(ctx, &state.TaskUpdate{Events: evs}); err != nil {
		d.log.Warn("could not requeue the tasks this server stops as it shuts down: their ends are reported as they come", "tasks", len(evs), "err", err)
		return
	}
	if d.tempData {
		d.log.Info("stopped the work this server ran: its jobs are deleted with the temporary data dir (--data-dir keeps them)", "tasks", len(evs))
		return
	}
	d.log.Info("requeued the work this server ran: it runs again when a coordinator schedules", "tasks", len(evs))
}

// pluginKinds lists the job kinds of cfg.JobKinds and of the plugins in
// the directory local tasks' atom looks in, read again at each call
// (plugins may be added while the coordinator runs).
func pluginKinds(cfg Config) func() []structs.JobKind {
	dir := cmp.Or(cfg.PluginDir, plugindir.Default)
	return func() []structs.JobKind {
		out := slices.Clone(cfg.JobKinds)
		for k := range plugindir.Plugins(dir) {
			out = append(out, structs.JobKind(k))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// localNode reports whether node is one of a local cluster's, whose
// tasks are processes of the server that started them.
func localNode(st *state.State, node structs.NodeID) bool {
	n := st.Nodes[node]
	if n == nil {
		return false
	}
	c := st.Clusters[n.Cluster]
	return c == nil || c.Backend != "kubernetes"
}

// applyCluster upserts the cluster config through whoever leads, retrying
// until it is in.
func applyCluster(ctx context.Context, fw *forwarder, c *structs.ClusterConfig, log *slog.Logger) {
	var cmds []state.Command
	for i := range c.Clusters {
		cmds = append(cmds, &state.ClusterUpsert{Cluster: &c.Clusters[i]})
	}
	for i := range c.Pools {
		cmds = append(cmds, &state.PoolUpsert{Pool: &c.Pools[i]})
	}
	for i := range c.Nodes {
		cmds = append(cmds, &state.NodeUpsert{Node: &c.Nodes[i]})
	}
	for i := range c.Quotas {
		cmds = append(cmds, &state.QuotaSet{Quota: &c.Quotas[i]})
	}
	if c.FairShare != nil {
		cmds = append(cmds, &state.FairShareSet{FairShare: c.FairShare})
	}
	for _, cmd := range cmds {
		for {
			_, err := fw.Apply(ctx, cmd)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			var remote *remoteError
			if errors.As(err, &remote) || errors.Is(err, state.ErrInvalid) {
				log.Error("cluster config refused", "command", fmt.Sprintf("%T", cmd), "err", err)
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	log.Info("cluster config applied", "clusters", len(c.Clusters), "pools", len(c.Pools), "nodes", len(c.Nodes), "quotas", len(c.Quotas))
}

// inUse is the hint for a listen that failed because another process
// holds the port: the flag that picks another; "" for other errors.
func inUse(err error, flag string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return fmt.Sprintf(" (another process holds the port: stop it, or choose another port with %s)", flag)
}
