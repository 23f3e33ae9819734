package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// DefaultKubeQPS and DefaultKubeBurst are each cluster client's rate
// limits unless configured: client-go's own 5 and 10 would throttle a
// leader starting hundreds of Pods (make bench-k8s starts 1,000 at once).
const (
	DefaultKubeQPS   = 1000
	DefaultKubeBurst = 2000
)

// kubeSettings is what one kubernetes cluster's backend uses: the cluster
// config's fields where set, else the server's.
type kubeSettings struct {
	image         string
	qps, burst    int
	heartbeatPods bool
}

func settingsFor(c *structs.Cluster, cfg Config) kubeSettings {
	s := kubeSettings{image: cfg.KubeImage, qps: cfg.KubeQPS, burst: cfg.KubeBurst, heartbeatPods: cfg.KubeHeartbeatPods}
	if s.qps <= 0 {
		s.qps = DefaultKubeQPS
	}
	if s.burst <= 0 {
		s.burst = DefaultKubeBurst
	}
	if c.Image != "" {
		s.image = c.Image
	}
	if c.QPS > 0 {
		s.qps = c.QPS
	}
	if c.Burst > 0 {
		s.burst = c.Burst
	}
	s.heartbeatPods = s.heartbeatPods || c.HeartbeatPods
	return s
}

// router is the server's backend when kubernetes clusters are configured:
// a task goes to its node's cluster's backend, the local one otherwise.
type router struct {
	srv   *server.Server
	local backend.Backend
	kube  map[structs.ClusterID]*kube.Backend
}

// backendFor returns the backend of the cluster task id's node belongs
// to, as the state has it now (a log request names only a task): its
// kubernetes backend, noKube for a kubernetes cluster this server has no
// client for, else the local one.
func (r *router) backendFor(id structs.TaskID) backend.Backend {
	var c *structs.Cluster
	r.srv.Read(func(s *state.State) {
		if t := s.Tasks[id]; t != nil {
			if n := s.Nodes[t.Node]; n != nil {
				c = s.Clusters[n.Cluster]
			}
		}
	})
	return r.backendIn(c)
}

// noKube is the backend of a kubernetes cluster that this server's
// --cluster-config does not name (a server started without it, or a
// cluster added later with cluster set): it starts and stops nothing,
// never a local process in the cluster's stead, and says why. The task
// waits, Scheduled, for a leader that has a client for the cluster.
type noKube struct {
	cluster structs.ClusterID
	server  string
}

func (n noKube) err(id structs.TaskID) error {
	return fmt.Errorf("task %s: cluster %s is a kubernetes cluster and server %s has no client for it: its --cluster-config does not name the cluster: start every server with the --cluster-config that names the cluster (kubeconfig, namespace)",
		id, n.cluster, n.server)
}

func (n noKube) Start(l backend.Launch) error { return n.err(l.Task.ID) }

func (noKube) Capabilities() backend.Capabilities { return backend.Capabilities{} }

func (n noKube) Stop(h backend.Halt) error { return n.err(h.Task) }

// kubeLogs opens the container log of task id when it runs on a
// kubernetes cluster: ok is false for a task of any other cluster (its
// output is a local backend's file).
func (r *router) kubeLogs(id structs.TaskID, follow bool) (rc io.ReadCloser, ok bool, err error) {
	switch b := r.backendFor(id).(type) {
	case *kube.Backend:
		rc, err = b.Logs(id, follow)
		return rc, true, err
	case noKube:
		return nil, true, fmt.Errorf("%w: its log is read through the cluster's API server", b.err(id))
	}
	return nil, false, nil
}

// warnNoKube logs, each term of leadership, the kubernetes clusters of the
// state that this server has no client for: their tasks are not started
// and their Nodes not followed while it leads.
func (r *router) warnNoKube(log *slog.Logger) {
	var missing []structs.ClusterID
	r.srv.Read(func(s *state.State) {
		for name, c := range s.Clusters {
			if c.Backend == "kubernetes" && r.kube[name] == nil {
				missing = append(missing, name)
			}
		}
	})
	slices.Sort(missing)
	for _, c := range missing {
		log.Error("leading without a client for a kubernetes cluster: its tasks are not started and its nodes not followed while this server leads; start every server with the --cluster-config that names it",
			"cluster", c)
	}
}

// backendIn returns the backend of cluster c (nil: the task's node or
// cluster is gone): its kubernetes backend, noKube for a kubernetes
// cluster this server has no client for, else the local one. Start and
// Stop take c from the leader's launch or halt record, without reading
// the state.
func (r *router) backendIn(c *structs.Cluster) backend.Backend {
	if c == nil {
		return r.local
	}
	if b := r.kube[c.Name]; b != nil {
		return b
	}
	if c.Backend == "kubernetes" {
		return noKube{cluster: c.Name, server: r.srv.ID()}
	}
	return r.local
}

func (r *router) Start(l backend.Launch) error { return r.backendIn(l.Cluster).Start(l) }

func (r *router) Stop(h backend.Halt) error { return r.backendIn(h.Cluster).Stop(h) }

// Capabilities: a new leader starts the tasks another server placed on
// a kubernetes cluster (Adopts): their Pods, named from the task, are
// there for every server to see, so Start finds the ones created and
// binds a gang's once all exist (creating the missing ones), all or none
// as ever. Spark executors are the executor loop's to bind; local tasks
// are processes of the server that placed them. The claims are the
// kubernetes clusters' (Claims).
func (r *router) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Adopts: func(l backend.Launch) bool {
			switch r.backendIn(l.Cluster).(type) {
			case *kube.Backend, noKube:
				return l.Task.Executor == ""
			}
			return false
		},
		Claims: r.Claims,
	}
}

// kubeHost is the server as the kubernetes backends ask it (kube.Host):
// the server itself (backend.Host), the configs with their data as the
// local backend gets them (taskenv.Configs over the state and keyring),
// and the Spark executor tasks (executors.go).
type kubeHost struct {
	*server.Server
	configs func(t *structs.Task, j *structs.Job) ([]taskenv.Config, error)
}

var _ kube.Host = kubeHost{}

// Configs returns task t's configs and secrets with their data.
func (h kubeHost) Configs(t *structs.Task, j *structs.Job) ([]taskenv.Config, error) {
	return h.configs(t, j)
}

// KeepConfigs names the config objects the backends' sweeps keep
// (keepConfigs).
func (h kubeHost) KeepConfigs() map[string]bool { return keepConfigs(h.Server) }

// kubeClient connects to cluster c as its kubeconfig says (in-cluster
// without one).
func kubeClient(c *structs.Cluster, ks kubeSettings) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	switch {
	case c.Kubeconfig == "":
		rc, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("cluster %s: no kubeconfig given, and this server runs in no Pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set) to use its service account: give the cluster a kubeconfig: FILE with the coordinator's credentials", c.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: no kubeconfig given, and this Pod's service account cannot be used: %w", c.Name, err)
		}
	default:
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("cluster %s: kubeconfig %q names no cluster to use (no current-context, or no clusters): give a kubeconfig file as kubectl uses, whose current context is the coordinator's", c.Name, c.Kubeconfig)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: kubeconfig %q: %w", c.Name, c.Kubeconfig, err)
		}
	}
	rc.QPS, rc.Burst = float32(ks.qps), ks.burst
	// Protobuf, as Kubernetes' own components talk: the API server decodes
	// and encodes it at a fraction of JSON's cost, which is what bounds a
	// leader creating hundreds of Pods at once (JSON stays the fallback).
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	rc.UserAgent = "atom-coordinator"
	return kubernetes.NewForConfig(rc)
}

// startKube starts a backend for every kubernetes cluster of cc and
// returns the router over them and lb, with a function that has the
// leader follow their Nodes into the state (to call once the clusters
// exist in it; from then on in every term of leadership) and one that
// closes the backends. Without kubernetes clusters the router sends every
// task to lb, but never one on a kubernetes cluster of the state (noKube).
func startKube(ctx context.Context, cc *structs.ClusterConfig, srv *server.Server, lb *LocalBackend, apply kube.ApplyFunc,
	coordinators string, every time.Duration, cfg Config, log *slog.Logger) (backend.Backend, func(), func(), error) {
	r := &router{srv: srv, local: lb, kube: map[structs.ClusterID]*kube.Backend{}}
	closeAll := func() {
		for _, b := range r.kube {
			b.Close()
		}
	}
	// Even without kubernetes clusters of its own, tasks go through the
	// router: one on a kubernetes cluster of the state is never run as a
	// local process (noKube).
	srv.AddLeaderWork(func(context.Context) { r.warnNoKube(log) })
	if cc == nil {
		return r, func() {}, closeAll, nil
	}
	for i := range cc.Clusters {
		c := &cc.Clusters[i]
		if c.Backend != "kubernetes" {
			continue
		}
		for _, u := range loopbackURLs(coordinators) {
			if settingsFor(c, cfg).heartbeatPods {
				break // no atom in its Pods (kwok's)
			}
			log.Warn("task Pods are told to reach this coordinator at a loopback address, which is the Pod's own: atom in them cannot heartbeat and their tasks are lost; set --advertise (and --peer) to an address Pods reach",
				"cluster", c.Name, "url", u)
		}
		ks := settingsFor(c, cfg)
		client, err := kubeClient(c, ks)
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		kc := kube.Config{Cluster: c.Name, Redis: c.Redis, Client: client, Namespace: c.Namespace, ServiceAccount: c.ServiceAccount, Coordinator: coordinators, CoordinatorCA: lb.CA,
			Heartbeat: every, Grace: lb.Grace, Image: ks.image, PluginDir: cfg.PluginDir, Log: log,
			Resync:    5 * time.Minute,
			NodeGrace: cfg.KubeNodeGrace, Sweep: cfg.KubeSweep, KeepFinished: cfg.KubeKeepFinished,
			Host: kubeHost{Server: srv, configs: lb.Configs}}
		if ks.heartbeatPods {
			kc.Beat = every
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		b, err := kube.New(sctx, kc, srv)
		cancel()
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		r.kube[c.Name] = b
	}
	if len(r.kube) == 0 {
		return r, func() {}, closeAll, nil
	}
	follow := func() {
		srv.AddLeaderWork(func(ctx context.Context) { followNodes(ctx, r.kube, apply, log) })
	}
	return r, follow, closeAll, nil
}

// followNodes follows the clusters' Nodes into the state until ctx ends:
// leader work (Server.AddLeaderWork), so only the leader commits their
// changes, each term from the Nodes as they are then (as the backends'
// informers have them).
func followNodes(ctx context.Context, backends map[structs.ClusterID]*kube.Backend, apply kube.ApplyFunc, log *slog.Logger) {
	var syncs []*kube.NodeSync
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		s, err := kube.NewNodeSync(ctx, backends[name], 5*time.Minute, apply, log)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("kubernetes nodes not followed", "cluster", name, "err", err)
			}
			continue
		}
		log.Info("following kubernetes nodes", "cluster", name)
		syncs = append(syncs, s)
	}
	<-ctx.Done()
	for _, s := range syncs {
		s.Close()
	}
}

// loopbackURLs lists the URLs of coordinators (comma-separated, as
// ATOM_COORDINATOR) whose host is a loopback address or localhost.
func loopbackURLs(coordinators string) []string {
	var out []string
	for _, s := range strings.Split(coordinators, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Host == "" {
			continue
		}
		h := u.Hostname()
		if ip := net.ParseIP(h); (ip != nil && ip.IsLoopback()) || h == "localhost" {
			out = append(out, s)
		}
	}
	return out
}

// retryApply applies a command through whoever leads, retrying what may
// succeed later (no leader yet) until ctx ends; a refusal is returned.
func retryApply(fw *forwarder) kube.ApplyFunc {
	return func(ctx context.Context, c state.Command) error {
		for {
			_, err := fw.Apply(ctx, c)
			var remote *remoteError
			if err == nil || errors.As(err, &remote) || errors.Is(err, state.ErrInvalid) || errors.Is(err, state.ErrNotFound) || ctx.Err() != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
