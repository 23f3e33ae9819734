package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/pkg/cliusage"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// allocation is what the coordinator gave this task.
type allocation struct {
	Coordinator string
	Task, Token string
	Job, Kind   string
	Replica     int
	Replicas    int
	Attempt     int
	JobJSON     []byte // the job as accepted (ATOM_JOB_SPEC), for job types
	GPU         gpu.Want
	Node        string
	// SimulatedGPUs: the node is simulated (local backend); GPUFaults
	// are its simulated faults.
	SimulatedGPUs bool
	GPUFaults     map[int]string
}

// readAllocation reads the allocation flags (and so the ATOM_* env).
func readAllocation(c *cli.Context) (allocation, error) {
	a, err := readGPUs(c)
	if err != nil {
		return a, err
	}
	a.Coordinator = strings.TrimSpace(c.String("coordinator"))
	a.Task, a.Token, a.Job = c.String("task"), c.String("token"), c.String("job")
	a.Kind = strings.TrimSpace(c.String("kind"))
	a.Replica, a.Replicas, a.Attempt = c.Int("replica"), c.Int("replicas"), c.Int("attempt")
	if a.Kind == "" {
		a.Kind = "command"
	}
	if a.JobJSON, err = jobJSON(c.String("job-spec"), cliusage.Source(c, "job-spec")); err != nil {
		return a, err
	}
	file := c.String("token-file")
	if a.Coordinator != "" && (a.Task == "" || a.Token == "" && file == "") {
		from := cliusage.Source(c, "coordinator")
		return a, fmt.Errorf("%s is set but %s or %s (or %s) is not: set both, or run standalone without %s",
			from, cliusage.Source(c, "task"), cliusage.Source(c, "token"), cliusage.Source(c, "token-file"), from)
	}
	if a.Coordinator != "" && a.Token == "" {
		if a.Token = exchanged; a.Token == "" { // not `atom run`, which exchanged it first (fetchTaskEnv)
			tok, err := exchangeToken(a.Coordinator, a.Task, file)
			if err != nil {
				return a, err
			}
			a.Token = tok.Token
		}
	}
	return a, nil
}

// readGPUs reads the accelerator part of the allocation flags: the
// allocated GPUs, the node, and whether its GPUs are simulated.
func readGPUs(c *cli.Context) (allocation, error) {
	a := allocation{GPU: gpu.Want{Type: strings.TrimSpace(c.String("accel-type"))}}
	for _, s := range strings.Split(c.String("accelerators"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 {
			return a, fmt.Errorf("%s: %q is not a device index: use comma-separated indices such as 0,1", cliusage.Source(c, "accelerators"), s)
		}
		a.GPU.Accelerators = append(a.GPU.Accelerators, i)
	}
	a.Node, a.SimulatedGPUs, a.GPU.HostGPUs = c.String("node"), c.Bool("simulated-gpus"), c.Bool("host-gpus")
	var err error
	a.GPUFaults, err = gpu.ParseFaults(c.String("simulated-gpu-faults"))
	return a, err
}

// exchangeToken gets task's allocation token and the rest of its
// environment from coordinator for the Pod's service-account token in
// file (Kubernetes: ATOM_TOKEN_FILE), before any heartbeat. A
// coordinator that is away is waited for (the job does not fail for an
// outage); a refusal, or a signal to stop first, ends atom.
func exchangeToken(coordinator, task, file string) (wire.TaskToken, error) {
	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tok, err := report.ExchangeToken(ctx, coordinator, structs.TaskID(task), file, log)
	if err != nil {
		return tok, fmt.Errorf("ATOM_TOKEN_FILE: no allocation token for task %s: %w", task, err)
	}
	return tok, nil
}
