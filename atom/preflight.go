package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
	"github.com/atom-sched/atom/atom/internal/report"
)

// lister is the GPU access atom uses: NVML, or on a simulated node (the
// local backend's) its simulated accelerators.
func lister(a allocation) gpu.Lister {
	if a.SimulatedGPUs {
		return gpu.Simulated{Node: a.Node, Model: a.GPU.Type, Want: a.GPU.Accelerators, Faults: a.GPUFaults}
	}
	return gpu.NVML{}
}

func preflightCommand() *cli.Command {
	return &cli.Command{
		Name:  "preflight",
		Usage: "check the allocated accelerators and print key=value lines",
		Flags: allocFlags(),
		Action: func(c *cli.Context) error {
			a, err := readAllocation(c)
			if err != nil {
				return cli.Exit("atom: "+err.Error(), exitUsage)
			}
			res, err := gpu.Preflight(lister(a), a.GPU)
			printPreflight(c.App.Writer, res, err)
			if err != nil {
				return cli.Exit("", exitPreflight)
			}
			return nil
		},
	}
}

// printPreflight writes the preflight's key=value lines.
func printPreflight(w io.Writer, res gpu.Result, err error) {
	fmt.Fprintf(w, "gpu_available=%t\ngpu_count=%d\ngpu_uuids=%s\n", res.Available, len(res.Devices), strings.Join(res.UUIDs(), ","))
	if err != nil {
		fmt.Fprintf(w, "preflight=failed reason=%q\n", err.Error())
		return
	}
	fmt.Fprintln(w, "preflight=ok")
}

// failPreflight reports a failed preflight (reason PreflightFailed, with
// the allocated accelerators found bad when the check could tell) so the
// coordinator quarantines them and places the job elsewhere, then exits 3.
func failPreflight(c *cli.Context, rep *report.Reporter, log *slog.Logger, err error) error {
	if rep != nil {
		var accels []int
		if ce := (*gpu.CheckError)(nil); errors.As(err, &ce) {
			accels = ce.Accelerators
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.Duration("report-timeout"))
		defer cancel()
		if err := rep.FinalPreflight(ctx, exitPreflight, err.Error(), accels); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	return cli.Exit("atom: "+err.Error(), exitPreflight)
}
