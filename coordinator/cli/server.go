package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/structs"
)

func init() { serverCommands = append(serverCommands, serverCommand(), devCommand()) }

// EnvSecret names the environment variable holding the servers' shared
// secret.
const EnvSecret = "ATOM_CLUSTER_SECRET"

func commonServerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "http-addr", Value: "127.0.0.1:7070", Usage: "host:port the HTTP API listens on"},
		&cli.StringFlag{Name: "advertise", Usage: "URL other servers and tasks use to reach this one (default: http://<http-addr>)"},
		&cli.StringFlag{Name: "data-dir", Usage: "Raft log, snapshots and task directories"},
		&cli.StringFlag{Name: "tokens", Usage: "tokens file: users: [{name, token, admin}]"},
		&cli.StringFlag{Name: "cluster-config", Usage: "YAML of clusters, pools, nodes and quotas that seeds a new cluster (ignored once it exists)"},
		&cli.DurationFlag{Name: "heartbeat-ttl", Value: server.DefaultHeartbeatTTL, Usage: "a task silent this long is lost"},
		&cli.DurationFlag{Name: "cycle", Value: server.DefaultCycle, Usage: "scheduling period"},
		&cli.DurationFlag{Name: "retention", Value: server.DefaultRetention, Usage: "how long ended jobs are kept"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.BoolFlag{Name: "real-gpus", Usage: "local backend: the machine's GPUs are the nodes' (atom checks them with NVML); default: simulated accelerators"},
		&cli.StringSliceFlag{Name: "simulated-gpu-fault", Usage: "local backend: NODE=INDEX:ecc|retired-pages, a simulated accelerator fault for atom's preflight to find (repeat)"},
		&cli.StringFlag{Name: "atom", Usage: "atom binary to run each task under (default: atom next to this binary, if there); \"none\" runs commands bare"},
	}
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
			&cli.StringFlag{Name: "id", Required: true, Usage: "this server's stable ID"},
			&cli.StringFlag{Name: "raft-addr", Value: "127.0.0.1:7000", Usage: "host:port of the Raft transport"},
			&cli.BoolFlag{Name: "bootstrap", Usage: "start a new cluster with this server"},
			&cli.StringSliceFlag{Name: "join", Usage: "HTTP URL of a server to join (repeat)"},
			&cli.StringSliceFlag{Name: "peer", Usage: "ID=URL of every server, for forwarding to the leader (repeat)"},
			&cli.StringFlag{Name: "secret", EnvVars: []string{EnvSecret}, Usage: "secret shared by the servers"},
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
			cfg.Server.ID = c.String("id")
			cfg.Server.RaftAddr = c.String("raft-addr")
			cfg.Server.Bootstrap = c.Bool("bootstrap")
			cfg.Server.Join = c.StringSlice("join")
			cfg.Peers, cfg.Secret = peers, c.String("secret")
			tokens, err := api.LoadTokens(c.String("tokens"))
			if err != nil {
				return err
			}
			cfg.Tokens = tokens
			return runDaemon(c, cfg)
		},
	}
}

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a single-server coordinator with the embedded local cluster: tasks run as local processes",
		Flags: commonServerFlags(),
		Action: func(c *cli.Context) error {
			cfg, err := daemonConfig(c)
			if err != nil {
				return err
			}
			if cfg.Server.DataDir == "" {
				dir, err := os.MkdirTemp("", "atom-dev-")
				if err != nil {
					return err
				}
				cfg.Server.DataDir = dir
			}
			if err := os.MkdirAll(cfg.Server.DataDir, 0o700); err != nil {
				return err
			}
			cfg.Server.ID, cfg.Server.RaftAddr, cfg.Server.Bootstrap = "dev", "127.0.0.1:0", true
			if cfg.Cluster == nil {
				if cfg.Cluster, err = daemon.DevCluster(); err != nil {
					return err
				}
			}
			if path := c.String("tokens"); path != "" {
				if cfg.Tokens, err = api.LoadTokens(path); err != nil {
					return err
				}
			} else if cfg.Tokens, err = devTokens(c, cfg.Server.DataDir); err != nil {
				return err
			}
			return runDaemon(c, cfg)
		},
	}
}

// devTokens makes (or reuses) DataDir/tokens.yaml with an admin user "dev"
// and tells the user how to use it.
func devTokens(c *cli.Context, dir string) (api.TokenFile, error) {
	path := filepath.Join(dir, "tokens.yaml")
	if _, err := os.Stat(path); err != nil {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return api.TokenFile{}, err
		}
		doc := fmt.Sprintf("users:\n  - {name: dev, token: %s, admin: true}\n", hex.EncodeToString(b))
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			return api.TokenFile{}, err
		}
	}
	f, err := api.LoadTokens(path)
	if err != nil {
		return f, err
	}
	for _, u := range f.Users {
		if u.Name == "dev" {
			fmt.Fprintf(c.App.Writer, "coordinator dev: data in %s\n  export %s=http://%s %s=%s\n", dir, EnvAddr, c.String("http-addr"), EnvToken, u.Token)
		}
	}
	return f, nil
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
	for _, f := range c.StringSlice("simulated-gpu-fault") {
		node, fault, ok := strings.Cut(f, "=")
		if !ok || node == "" {
			return cfg, usagef("--simulated-gpu-fault %q: use NODE=INDEX:ecc or NODE=INDEX:retired-pages", f)
		}
		if cfg.GPUFaults == nil {
			cfg.GPUFaults = map[string]string{}
		}
		cfg.GPUFaults[node] = strings.TrimPrefix(cfg.GPUFaults[node]+","+fault, ",")
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

// runDaemon serves until SIGINT or SIGTERM.
func runDaemon(c *cli.Context, cfg daemon.Config) error {
	d, err := daemon.Start(cfg)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case <-c.Context.Done():
	}
	return d.Close()
}
