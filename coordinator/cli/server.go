package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/cliusage"
	"github.com/atom-sched/atom/pkg/structs"
)

func init() { serverCommands = append(serverCommands, serverCommand(), devCommand()) }

// EnvSecret names the environment variable holding the servers' shared
// secret.
const EnvSecret = "ATOM_CLUSTER_SECRET"

// advertiseFlag is --advertise, with the usage of server or dev (dev has
// no peers and no TLS).
func advertiseFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "advertise", Usage: usage}
}

// commonServerFlags are the flags of server and dev but --advertise.
func commonServerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "http-addr", Value: "127.0.0.1:7070", Usage: "host:port the HTTP API listens on"},
		&cli.StringFlag{Name: "data-dir", Usage: "Raft log, snapshots and task directories"},
		&cli.StringFlag{Name: "tokens", Usage: "tokens file: users: [{name, token, admin}]"},
		&cli.StringFlag{Name: "keyring", EnvVars: []string{"ATOM_KEYRING"}, Usage: "keyring file that seals secrets: keys: [{id, key}], the first key sealing (give every server the same file); without it the server keeps no secrets (dev: made in --data-dir)"},
		&cli.StringFlag{Name: "cluster-config", Usage: "YAML of clusters, pools, nodes and quotas that seeds a new cluster (ignored once it exists), and how this server reaches its kubernetes clusters (read at every start: give every server the same)"},
		&cli.DurationFlag{Name: "heartbeat-ttl", Value: server.DefaultHeartbeatTTL, Usage: "a task silent this long is lost"},
		&cli.DurationFlag{Name: "cycle", Value: server.DefaultCycle, Usage: "scheduling period"},
		&cli.DurationFlag{Name: "retention", Value: server.DefaultRetention, Usage: "how long ended jobs are kept"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.BoolFlag{Name: "real-gpus", Usage: "local backend: the machine's GPUs are the nodes' (atom checks them with NVML); default: simulated accelerators"},
		&cli.StringSliceFlag{Name: "simulated-gpu-fault", Usage: "local backend: NODE=INDEX:KIND[,INDEX:KIND...], simulated faults of a node's accelerators for atom's preflight to find; KIND is ecc or retired-pages, INDEX an accelerator of NODE from 0 (repeat the flag for other nodes)"},
		&cli.StringFlag{Name: "plugin-dir", EnvVars: []string{"ATOM_PLUGIN_DIR"}, Usage: "local backend: directory of job-type plugins (atom-plugin-KIND), passed to tasks as ATOM_PLUGIN_DIR (default: $ATOM_PLUGIN_DIR; none: atom's default, /app/plugins)"},
		&cli.StringSliceFlag{Name: "job-kind", Usage: "a job kind beyond mpi, spark, service and command that tasks have a plugin for (atom-plugin-KIND) in their images; --plugin-dir's count already (repeat); jobs of other kinds are refused"},
		&cli.StringFlag{Name: "atom", Usage: "atom binary to run each task under (default: atom next to this binary, if there); \"none\" runs commands bare"},
		&cli.StringFlag{Name: "kube-image", Usage: "kubernetes clusters: image of task Pods whose job names none, with /app/atom as entrypoint (a cluster's image: overrides it)"},
		&cli.BoolFlag{Name: "kube-heartbeat-pods", Usage: "kubernetes clusters: the coordinator heartbeats for every Running task Pod, for clusters where no atom runs in them (kwok's); a cluster's heartbeatPods: true sets it for that one"},
		&cli.IntFlag{Name: "kube-qps", Value: daemon.DefaultKubeQPS, Usage: fmt.Sprintf("kubernetes clusters: requests per second each cluster's client may send (1-%d; a cluster's qps: overrides it)", structs.MaxKubeQPS)},
		&cli.DurationFlag{Name: "kube-keep-finished", Value: kube.DefaultKeepFinished, Usage: "kubernetes clusters: how long a task's finished Pod is kept, for job logs to read its container log (0 deletes it at once; the cluster's log shipping keeps output for longer)"},
		&cli.IntFlag{Name: "kube-burst", Value: daemon.DefaultKubeBurst, Usage: fmt.Sprintf("kubernetes clusters: requests each cluster's client may send in a burst above --kube-qps (1-%d; a cluster's burst: overrides it)", structs.MaxKubeBurst)},
	}
}

// kubeFlags reads the kubernetes backend's flags into cfg.
func kubeFlags(c *cli.Context, cfg *daemon.Config) error {
	image := c.String("kube-image")
	if strings.ContainsAny(image, " \t\n") {
		return usagef("--kube-image %q: use an image reference without spaces, such as registry.example.com/atom/cpu:1.0", image)
	}
	qps, burst := c.Int("kube-qps"), c.Int("kube-burst")
	if qps < 1 || qps > structs.MaxKubeQPS {
		return usagef("--kube-qps %d: use requests per second from 1 to %d", qps, structs.MaxKubeQPS)
	}
	if burst < 1 || burst > structs.MaxKubeBurst {
		return usagef("--kube-burst %d: use a number of requests from 1 to %d", burst, structs.MaxKubeBurst)
	}
	keep := c.Duration("kube-keep-finished")
	if keep < 0 {
		return usagef("--kube-keep-finished %s: use a duration of 0 (delete at once) or more, such as 1h", keep)
	}
	if keep == 0 {
		keep = -1 // kube.Config: negative deletes at once
	}
	cfg.KubeImage, cfg.KubeHeartbeatPods, cfg.KubeQPS, cfg.KubeBurst, cfg.KubeKeepFinished = image, c.Bool("kube-heartbeat-pods"), qps, burst, keep
	return nil
}

// atomPath finds the atom binary for the local backend.
func atomPath(flag string) string {
	switch flag {
	case "none":
		return ""
	case "":
		exe, err := os.Executable()
		if err != nil {
			return ""
		}
		p := filepath.Join(filepath.Dir(exe), "atom")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
		return ""
	}
	return flag
}

func serverCommand() *cli.Command {
	return &cli.Command{
		Name:  "server",
		Usage: "run one coordinator server of a Raft cluster (bootstrap the first, join the others)",
		Flags: append(commonServerFlags(),
			advertiseFlag("URL other servers and tasks use to reach this one; with TLS an https:// URL whose host --tls-cert names (default: http://<http-addr>, https://<http-addr> with --tls-cert)"),
			&cli.StringFlag{Name: "id", Required: true, Usage: "this server's stable ID"},
			&cli.StringFlag{Name: "raft-addr", Value: "127.0.0.1:7000", Usage: "host:port of the Raft transport"},
			&cli.StringFlag{Name: "raft-advertise", Usage: "IP:port or name:port the other servers reach this one's Raft transport at (default: --raft-addr), e.g. a proxy or NAT in front of it, or a stable DNS name (a StatefulSet's Pod), dialed by name"},
			&cli.BoolFlag{Name: "bootstrap", Usage: "start a new cluster with this server"},
			&cli.StringSliceFlag{Name: "join", Usage: "URL of any server of the cluster to join (a follower passes the join on to the leader; repeat for others to try)"},
			&cli.StringSliceFlag{Name: "peer", Usage: "ID=URL of every server, for forwarding to the leader (repeat)"},
			&cli.StringFlag{Name: "secret", EnvVars: []string{EnvSecret}, Usage: "secret shared by the servers"},
			&cli.StringFlag{Name: "tls-cert", Usage: "PEM certificate of this server (for its IPs/names): serve HTTPS, and Raft and server-to-server requests over mutual TLS; needs --tls-key and --tls-ca"},
			&cli.StringFlag{Name: "tls-key", Usage: "PEM private key of --tls-cert"},
			&cli.StringFlag{Name: "tls-ca", Usage: "PEM certificate of the CA that signs every server's certificate: peers must present one it signed; tasks get it as ATOM_TLS_CA"},
		),
		Action: func(c *cli.Context) error {
			if c.String("data-dir") == "" || c.String("tokens") == "" {
				return usagef("server needs --data-dir and --tokens")
			}
			peers := map[string]string{}
			for _, p := range c.StringSlice("peer") {
				id, url, ok := strings.Cut(p, "=")
				if !ok || id == "" || url == "" {
					return usagef("--peer %q: use ID=URL, e.g. s2=http://10.0.0.2:7070", p)
				}
				peers[id] = strings.TrimRight(url, "/")
			}
			if (len(peers) > 0 || len(c.StringSlice("join")) > 0) && c.String("secret") == "" {
				return usagef("servers of a cluster need a shared --secret (or $%s)", EnvSecret)
			}
			cfg, err := daemonConfig(c)
			if err != nil {
				return err
			}
			if cfg.GPUFaults, err = gpuFaults(c, cfg.Cluster); err != nil {
				return err
			}
			cfg.Server.ID = c.String("id")
			cfg.Server.RaftAddr = c.String("raft-addr")
			cfg.Server.RaftAdvertise = c.String("raft-advertise")
			cfg.Server.Bootstrap = c.Bool("bootstrap")
			cfg.Server.Join = c.StringSlice("join")
			cfg.Peers, cfg.Secret = peers, c.String("secret")
			cfg.TLS = daemon.TLSFiles{Cert: c.String("tls-cert"), Key: c.String("tls-key"), CA: c.String("tls-ca")}
			if n := countSet(cfg.TLS.Cert, cfg.TLS.Key, cfg.TLS.CA); n != 0 && n != 3 {
				return usagef("TLS needs --tls-cert, --tls-key and --tls-ca together")
			}
			tokens, err := api.LoadTokens(c.String("tokens"))
			if err != nil {
				return err
			}
			cfg.Tokens = tokens
			return runDaemon(c, cfg, nil)
		},
	}
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a single-server coordinator with the embedded local cluster: tasks run as local processes",
		Flags: append(commonServerFlags(),
			advertiseFlag("http:// URL tasks use to reach this coordinator, e.g. when --http-addr is 0.0.0.0:7070 (default: http://<http-addr>)")),
		Action: func(c *cli.Context) (err error) {
			cfg, err := daemonConfig(c)
			if err != nil {
				return err
			}
			// made is the directory this run makes for its data: the
			// temporary one, or the first of --data-dir's that was not
			// there. The temporary one goes when dev exits, whether it
			// started or not (its port taken): its tasks have stopped; a
			// --data-dir made by a run that failed to start goes too.
			temp, made, started := "", "", false
			if cfg.Server.DataDir == "" {
				removeStaleDevDirs(c.App.ErrWriter)
				dir, err := os.MkdirTemp("", "atom-dev-")
				if err != nil {
					return err
				}
				cfg.Server.DataDir, temp, made = dir, dir, dir
				if err := markDevDir(dir); err != nil {
					_ = os.RemoveAll(dir)
					return err
				}
			} else {
				made = firstMissing(cfg.Server.DataDir)
			}
			defer func() {
				if made != "" && (temp != "" || (err != nil && !started)) {
					_ = os.RemoveAll(made)
				}
			}()
			if err := os.MkdirAll(cfg.Server.DataDir, 0o700); err != nil {
				return err
			}
			cfg.Server.ID, cfg.Server.RaftAddr, cfg.Server.Bootstrap = "dev", "127.0.0.1:0", true
			if cfg.Cluster == nil {
				if cfg.Cluster, err = daemon.DevCluster(); err != nil {
					return err
				}
			}
			if cfg.GPUFaults, err = gpuFaults(c, cfg.Cluster); err != nil {
				return err
			}
			if cfg.Keyring == nil {
				if cfg.Keyring, err = devKeyring(cfg.Server.DataDir); err != nil {
					return err
				}
			}
			// The banner says where the state is, and whether it outlives
			// this run, before the export line: a Ctrl-C on a temporary
			// one deletes every job.
			hello := fmt.Sprintf("coordinator dev: data in %s\n", cfg.Server.DataDir)
			if temp != "" {
				hello = fmt.Sprintf("coordinator dev: data in %s is temporary: deleted with its jobs when dev exits (--data-dir DIR keeps it)\n", temp)
				cfg.TempData = true
			}
			var exports string
			if path := c.String("tokens"); path != "" {
				if cfg.Tokens, err = api.LoadTokens(path); err != nil {
					return err
				}
			} else if cfg.Tokens, exports, err = devTokens(c, cfg.Server.DataDir); err != nil {
				return err
			}
			hello += exports
			err = runDaemon(c, cfg, func() { started = true; fmt.Fprint(c.App.Writer, hello) })
			if temp != "" && started {
				if rmErr := os.RemoveAll(temp); rmErr != nil {
					fmt.Fprintf(c.App.ErrWriter, "coordinator dev: could not remove its data in %s: %v\n", temp, rmErr)
				} else {
					fmt.Fprintf(c.App.Writer, "coordinator dev: removed its data in %s (give --data-dir to keep it)\n", temp)
				}
				made = ""
			}
			return err
		},
	}
}

// firstMissing returns the first directory of dir's path, dir included,
// that does not exist (what MkdirAll would make first); "" if dir exists.
func firstMissing(dir string) string {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return ""
	}
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		if _, err := os.Lstat(parent); err == nil {
			return dir
		}
		dir = parent
	}
}

// devTokens makes (or reuses) DataDir/tokens.yaml with an admin user "dev"
// and returns the export line that tells the user how to use it, printed
// once the server has started (not before a start that fails).
func devTokens(c *cli.Context, dir string) (api.TokenFile, string, error) {
	path := filepath.Join(dir, "tokens.yaml")
	if _, err := os.Stat(path); err != nil {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return api.TokenFile{}, "", err
		}
		doc := fmt.Sprintf("users:\n  - {name: dev, token: %s, admin: true}\n", hex.EncodeToString(b))
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			return api.TokenFile{}, "", err
		}
	}
	f, err := api.LoadTokens(path)
	if err != nil {
		return f, "", err
	}
	hello := ""
	for _, u := range f.Users {
		if u.Name == "dev" {
			hello = fmt.Sprintf("  export %s=http://%s %s=%s\n", EnvAddr, c.String("http-addr"), EnvToken, u.Token)
		}
	}
	return f, hello, nil
}

// devKeyring makes (or reuses) DataDir/keyring.yaml with one key.
func devKeyring(dir string) (*keyring.Keyring, error) {
	path := filepath.Join(dir, "keyring.yaml")
	if _, err := os.Stat(path); err != nil {
		f, err := keyring.Generate("dev")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, f, 0o600); err != nil {
			return nil, err
		}
	}
	return keyring.Load(path)
}

func daemonConfig(c *cli.Context) (daemon.Config, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return daemon.Config{}, usagef("--log-level %q: use debug, info, warn or error", c.String("log-level"))
	}
	cfg := daemon.Config{
		Atom:      atomPath(c.String("atom")),
		HTTPAddr:  c.String("http-addr"),
		Advertise: c.String("advertise"),
		Logger:    slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: lvl})),
	}
	cfg.RealGPUs = c.Bool("real-gpus")
	if path := c.String("keyring"); path != "" {
		k, err := keyring.Load(path)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", cliusage.Source(c, "keyring"), err)
		}
		cfg.Keyring = k
	}
	if err := kubeFlags(c, &cfg); err != nil {
		return cfg, err
	}
	for _, k := range c.StringSlice("job-kind") {
		if errs := validation.IsDNS1035Label(k); len(errs) > 0 {
			return cfg, usagef("--job-kind %q: use a job kind (a DNS-1035 label: lowercase, starting with a letter): %s", k, structs.ValidationText(errs))
		}
		cfg.JobKinds = append(cfg.JobKinds, structs.JobKind(k))
	}
	if dir := c.String("plugin-dir"); dir != "" {
		// Tasks run in directories of their own: a relative path would
		// name another place there.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return cfg, fmt.Errorf("%s %q: %w", cliusage.Source(c, "plugin-dir"), dir, err)
		}
		cfg.PluginDir = abs
	}
	cfg.Server.DataDir = c.String("data-dir")
	cfg.Server.HeartbeatTTL = c.Duration("heartbeat-ttl")
	cfg.Server.Cycle = c.Duration("cycle")
	cfg.Server.Retention = c.Duration("retention")
	if path := c.String("cluster-config"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, err
		}
		cc, err := structs.ParseClusterConfig(b)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", path, err)
		}
		cfg.Cluster = cc
	}
	return cfg, nil
}

// runDaemon serves until SIGINT or SIGTERM; started runs once the
// server's cluster config is in (what it says works at once).
func runDaemon(c *cli.Context, cfg daemon.Config, started func()) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	d, err := daemon.Start(cfg)
	if err != nil {
		return err
	}
	if started != nil {
		select {
		case <-d.Seeded():
			started()
		case <-sig:
			return d.Close()
		case <-c.Context.Done():
			return d.Close()
		}
	}
	select {
	case <-sig:
	case <-c.Context.Done():
	case err := <-d.JoinFailed():
		// This server cannot become part of the cluster until its
		// settings change: say what to fix and exit.
		_ = d.Close()
		return fmt.Errorf("coordinator server %s cannot join the cluster: %w", cfg.Server.ID, err)
	}
	return d.Close()
}

// faultUsage is how a --simulated-gpu-fault value is written.
const faultUsage = "use NODE=INDEX:KIND[,INDEX:KIND...], e.g. a100-1=0:ecc or v100-1=0:ecc,1:retired-pages, where KIND is ecc or retired-pages (repeat the flag for other nodes)"

// gpuFaults reads --simulated-gpu-fault into daemon.Config.GPUFaults
// ("0:ecc,1:retired-pages" by node). Each value is NODE=INDEX:KIND, with
// more INDEX:KIND after commas; the flag's own comma splitting is undone
// by joining a piece without "=" to the value before it. When the cluster
// config is known (cc), each node must be in it and have an accelerator
// at each index.
func gpuFaults(c *cli.Context, cc *structs.ClusterConfig) (map[string]string, error) {
	pieces := c.StringSlice("simulated-gpu-fault")
	if len(pieces) == 0 {
		return nil, nil
	}
	if c.Bool("real-gpus") {
		return nil, usagef("--simulated-gpu-fault needs simulated GPUs: leave out --real-gpus (NVML reports the real GPUs' faults)")
	}
	// Undo the splitting: "v100-1=0:ecc", "1:ecc" is one value.
	var values [][]string
	for _, p := range pieces {
		if strings.Contains(p, "=") || len(values) == 0 {
			values = append(values, []string{p})
		} else {
			values[len(values)-1] = append(values[len(values)-1], p)
		}
	}
	var nodes map[string]*structs.Node
	if cc != nil {
		nodes = map[string]*structs.Node{}
		for i := range cc.Nodes {
			nodes[string(cc.Nodes[i].Name)] = &cc.Nodes[i]
		}
	}
	out := map[string]string{}
	seen := map[string]bool{}
	for _, parts := range values {
		value := strings.Join(parts, ",")
		node, first, ok := strings.Cut(parts[0], "=")
		if !ok || node == "" {
			return nil, usagef("--simulated-gpu-fault %q: %s", value, faultUsage)
		}
		var n *structs.Node
		if nodes != nil {
			if n = nodes[node]; n == nil {
				return nil, usagef("--simulated-gpu-fault %q: the cluster config has no node %s: use a node with accelerators: %s", value, node, gpuNodes(cc))
			}
			if n.Capacity.Accels == 0 {
				return nil, usagef("--simulated-gpu-fault %q: node %s has no accelerators: use a node with accelerators: %s", value, node, gpuNodes(cc))
			}
		}
		for _, f := range append([]string{first}, parts[1:]...) {
			is, kind, ok := strings.Cut(f, ":")
			if !ok {
				return nil, usagef("--simulated-gpu-fault %q: %q is not INDEX:KIND: %s", value, f, faultUsage)
			}
			i, err := strconv.Atoi(is)
			if err != nil || i < 0 || strings.TrimLeft(is, "0123456789") != "" {
				return nil, usagef("--simulated-gpu-fault %q: accelerator index %q is not allowed: use a whole number from 0", value, is)
			}
			if kind != "ecc" && kind != "retired-pages" {
				return nil, usagef("--simulated-gpu-fault %q: fault kind %q is not allowed: use ecc or retired-pages", value, kind)
			}
			if n != nil && int64(i) >= n.Capacity.Accels {
				return nil, usagef("--simulated-gpu-fault %q: node %s has %d accelerators: use an index from 0 to %d", value, node, n.Capacity.Accels, n.Capacity.Accels-1)
			}
			key := node + "=" + strconv.Itoa(i)
			if seen[key] {
				return nil, usagef("--simulated-gpu-fault %q: accelerator %d of node %s has a fault already: give each accelerator one", value, i, node)
			}
			seen[key] = true
			out[node] = strings.TrimPrefix(out[node]+","+strconv.Itoa(i)+":"+kind, ",")
		}
	}
	return out, nil
}

// gpuNodes lists the cluster config's nodes that have accelerators, with
// their indices: "a100-1 (0-7), v100-1 (0-3)".
func gpuNodes(cc *structs.ClusterConfig) string {
	var names []string
	for _, n := range cc.Nodes {
		switch {
		case n.Capacity.Accels == 1:
			names = append(names, fmt.Sprintf("%s (0)", n.Name))
		case n.Capacity.Accels > 1:
			names = append(names, fmt.Sprintf("%s (0-%d)", n.Name, n.Capacity.Accels-1))
		}
	}
	if len(names) == 0 {
		return "it has none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
