package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/plugin/plugindir"
	"github.com/atom-sched/atom/plugins/command"
	"github.com/atom-sched/atom/plugins/mpi"
	"github.com/atom-sched/atom/plugins/spark"
)

// exitPlugin: the job type refused the task or its plugin crashed; the
// job's command was not started.
const exitPlugin = 4

// builtins are the job types atom carries.
func builtins() *plugin.Catalog {
	c := plugin.NewCatalog()
	c.Register("command", command.New("command"))
	c.Register("service", command.New("service"))
	c.Register("mpi", mpi.New)
	c.Register("spark", spark.New)
	return c
}

// loader finds job types: plugins in dir first, checked against the
// checksum file sums (or dir's SHA256SUMS), then the built-ins, served by
// this binary in a plugin process of its own.
func loader(dir, sums string) (*plugin.Loader, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find atom's own binary to serve plugins: %w", err)
	}
	return &plugin.Loader{Catalog: builtins(), Dir: dir, Sums: sums, Self: []string{self, "plugin", "serve"}}, nil
}

func pluginCommand() *cli.Command {
	return &cli.Command{
		Name:  "plugin",
		Usage: "job-type plugins",
		Subcommands: []*cli.Command{{
			Name:  "list",
			Usage: "list the job kinds atom runs",
			Flags: []cli.Flag{pluginDirFlag()},
			Action: func(c *cli.Context) error {
				external := plugindir.Plugins(c.String("plugin-dir"))
				for _, k := range builtins().Kinds() {
					if p, ok := external[k]; ok {
						fmt.Fprintf(c.App.Writer, "%s\t%s (instead of the built-in)\n", k, p)
						delete(external, k)
						continue
					}
					fmt.Fprintf(c.App.Writer, "%s\tbuilt-in\n", k)
				}
				for _, k := range slices.Sorted(maps.Keys(external)) {
					fmt.Fprintf(c.App.Writer, "%s\t%s\n", k, external[k])
				}
				return nil
			},
		}, {
			Name:      "serve",
			Usage:     "serve a built-in job type as a plugin process (atom runs this itself)",
			ArgsUsage: "KIND",
			Hidden:    true,
			Action: func(c *cli.Context) error {
				f, ok := builtins().Lookup(c.Args().First())
				if !ok {
					return cli.Exit(fmt.Sprintf("atom: no built-in job type %q: use one of %v", c.Args().First(), builtins().Kinds()), exitUsage)
				}
				plugin.Serve(f())
				return nil
			},
		}},
	}
}

func pluginDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "plugin-dir", Value: plugindir.Default, EnvVars: []string{"ATOM_PLUGIN_DIR"}, Usage: "directory of job-type plugins named " + plugin.BinaryPrefix + "KIND"}
}

func pluginSumsFlag() cli.Flag {
	return &cli.StringFlag{Name: "plugin-sums", EnvVars: []string{"ATOM_PLUGIN_SHA256SUMS"},
		Usage: "checksum file (sha256sum format) external plugins must match; default: " + plugin.SumsFile + " in the plugin directory, when it exists"}
}

// prepare asks the job type for what to run.
func prepare(ctx context.Context, dir, sums string, a allocation, argv []string) (plugin.Exec, error) {
	l, err := loader(dir, sums)
	if err != nil {
		return plugin.Exec{}, err
	}
	h, err := l.Open(ctx, a.Kind)
	if err != nil {
		return plugin.Exec{}, err
	}
	defer h.Close()
	wd, _ := os.Getwd()
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && !strings.HasPrefix(k, "ATOM_TOKEN") {
			env[k] = v
		}
	}
	if len(l.Self) > 0 {
		env["ATOM_BIN"] = l.Self[0] // for job types that run atom (mpirun's atom rsh)
	}
	ex, err := h.Prepare(ctx, h.API, plugin.Task{
		Job: a.Job, ID: a.Task, Kind: a.Kind, Replica: a.Replica, Replicas: a.Replicas, Attempt: a.Attempt,
		Command: argv, Env: env, Dir: wd, Coordinator: a.Coordinator, Token: a.Token,
		JobJSON: a.JobJSON, AccelType: a.GPU.Type, Accelerators: len(a.GPU.Accelerators),
	})
	if err != nil {
		return ex, fmt.Errorf("job type %s: %w", a.Kind, err)
	}
	if len(ex.Argv) == 0 && !ex.ServeLaunches {
		return ex, fmt.Errorf("job type %s gave nothing to run", a.Kind)
	}
	return ex, nil
}

// jobJSON checks the ATOM_JOB_SPEC the backend set (from names where s
// came from): JSON.
func jobJSON(s, from string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("%s is not valid JSON: the backend sets it to the job as accepted", from)
	}
	return []byte(s), nil
}
