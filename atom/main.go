// Command atom is the ENTRYPOINT of every job container: it checks the
// allocated accelerators, runs the job's command as its child, forwards
// signals, reaps orphans as PID 1, heartbeats to the coordinator and
// exits with the job's status. atom/README.md describes the whole flow.
//
//	atom run -- CMD [ARGS...]   preflight, then run CMD under supervision
//	atom preflight              only the GPU preflight, as key=value lines
//	atom gpus [--spark]         the allocated GPUs; --spark: Spark's discovery JSON
//	atom cache put|get|ls|rm|du  load and inspect the Redis dataset cache
//	atom cache mount DIR        serve it with FUSE (atom run does, for jobs with cache:)
//
// Its allocation comes from the environment the backend sets: ATOM_COORDINATOR,
// ATOM_TASK_ID, ATOM_TOKEN, ATOM_JOB_ID, ATOM_REPLICA, ATOM_REPLICAS,
// ATOM_ACCEL_TYPE and ATOM_ACCELERATORS, and ATOM_TLS_CA (the CA of a
// coordinator that serves HTTPS). On Kubernetes the Pod carries only
// ATOM_COORDINATOR, ATOM_TASK_ID and ATOM_TOKEN_FILE (and ATOM_TLS_CA),
// packed in one variable, ATOM_TASK_ENV, which atom expands first; atom
// run gets the rest from the coordinator with its allocation token, in
// exchange for the Pod's service-account token. Without
// ATOM_COORDINATOR it runs the
// command standalone, so images work outside atom.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/cliusage"
)

// Exit codes of atom itself; otherwise atom exits with its job's status.
const (
	exitUsage     = 2   // bad flags or environment
	exitPreflight = 3   // the GPU preflight failed; the command was not started
	exitStopped   = 143 // stopped (SIGTERM) before the job's command started
	exitNoStart   = 127 // the command could not be started
)

func main() {
	if err := expandTaskEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "atom:", err)
		os.Exit(exitUsage)
	}
	if err := app().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "atom:", err)
		os.Exit(exitUsage)
	}
}

func app() *cli.App {
	a := &cli.App{
		Name:     "atom",
		Usage:    "the in-container agent of atom jobs",
		Commands: []*cli.Command{runCommand(), preflightCommand(), gpusCommand(), pluginCommand(), rshCommand(), cacheCommand()},
		Before: func(c *cli.Context) error {
			if err := trustCoordinatorCA(); err != nil {
				return err
			}
			if c.Args().First() == "run" {
				return fetchTaskEnv()
			}
			return nil
		},
		// Exit codes are the job's: cli.Exit carries them out of Run.
		ExitErrHandler: func(_ *cli.Context, err error) { cli.HandleExitCoder(err) },
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w (see atom --help)", cliusage.Reword(err, c.App.Flags))
		},
	}
	// A flag or variable atom cannot parse is one line naming it (exit
	// status 2), not the command's whole help text.
	cliusage.OnEveryCommand(a.Commands, func(c *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w (see %s --help)", cliusage.Reword(err, c.Command.Flags), c.Command.HelpName)
	})
	// help job submit shows what job submit --help does.
	cliusage.HelpCommand(a)
	// A flag on the command line wins over its ATOM_* variable, which is
	// read only for a flag not given (after fetchTaskEnv has set them).
	cliusage.EnvAfterFlags(a)
	return a
}

// allocFlags are the allocation, read from the ATOM_* environment.
func allocFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "coordinator", EnvVars: []string{"ATOM_COORDINATOR"}, Usage: "coordinator URL; empty runs standalone"},
		&cli.StringFlag{Name: "task", EnvVars: []string{"ATOM_TASK_ID"}, Usage: "this task's ID"},
		&cli.StringFlag{Name: "token", EnvVars: []string{"ATOM_TOKEN"}, Usage: "this task's allocation token"},
		&cli.StringFlag{Name: "token-file", EnvVars: []string{"ATOM_TOKEN_FILE"}, Usage: "without --token: a file holding this Pod's service-account token, which atom exchanges at the coordinator for the allocation token (Kubernetes)"},
		&cli.StringFlag{Name: "job", EnvVars: []string{"ATOM_JOB_ID"}, Usage: "the job's ID"},
		&cli.IntFlag{Name: "replica", EnvVars: []string{"ATOM_REPLICA"}, Usage: "this task's replica index"},
		&cli.IntFlag{Name: "replicas", EnvVars: []string{"ATOM_REPLICAS"}, Usage: "the job's replica count"},
		&cli.IntFlag{Name: "attempt", EnvVars: []string{"ATOM_ATTEMPT"}, Usage: "the job's requeues before this attempt: 0 on its first (job status shows it counted from 1)"},
		&cli.StringFlag{Name: "kind", EnvVars: []string{"ATOM_JOB_KIND"}, Value: "command", Usage: "the job's kind: the job type that prepares the task"},
		&cli.StringFlag{Name: "node", EnvVars: []string{"ATOM_NODE"}, Usage: "the node the task was placed on"},
		&cli.BoolFlag{Name: "simulated-gpus", EnvVars: []string{"ATOM_SIMULATED_GPUS"}, Usage: "the node's accelerators are simulated (local backend): check the allocation against them, not NVML"},
		&cli.BoolFlag{Name: "host-gpus", EnvVars: []string{"ATOM_HOST_GPUS"}, Usage: "every GPU of the host is visible (no container): check only the allocated ones and hide the others from the job (CUDA_VISIBLE_DEVICES)"},
		&cli.StringFlag{Name: "simulated-gpu-faults", EnvVars: []string{"ATOM_SIMULATED_GPU_FAULTS"}, Usage: "faults of simulated accelerators: INDEX:ecc or INDEX:retired-pages, comma-separated"},
		&cli.StringFlag{Name: "job-spec", EnvVars: []string{"ATOM_JOB_SPEC"}, Usage: "the job as accepted, in JSON (set by the backend)"},
		&cli.StringFlag{Name: "accel-type", EnvVars: []string{"ATOM_ACCEL_TYPE"}, Usage: "allocated accelerator model, such as A100"},
		&cli.StringFlag{Name: "accelerators", EnvVars: []string{"ATOM_ACCELERATORS"}, Usage: "allocated accelerator indices, comma-separated"},
	}
}
