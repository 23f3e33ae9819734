package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
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
