package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
)

// sparkResource is what a Spark resource discovery script prints: the
// resource's name and the addresses of its units ("Spark Configuration",
// Custom Resource Scheduling: a JSON ResourceInformation).
type sparkResource struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}

func gpusCommand() *cli.Command {
	return &cli.Command{
		Name:  "gpus",
		Usage: "the GPUs allocated to this task, checked as the preflight checks them",
		Description: "One line per GPU: its CUDA ordinal as the job sees it, its index on the node, its UUID and model.\n" +
			"With --spark, the JSON a Spark resource discovery script prints instead, {\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}:\n" +
			"the addresses are those ordinals, 0 to n-1 in the allocation's order (a container sees only its GPUs; on the\n" +
			"local backend atom gives the job CUDA_VISIBLE_DEVICES of its own), as Spark hands them to tasks and plugins\n" +
			"that select a device by ordinal. The GPUs are NVML's, or the simulated node's (ATOM_SIMULATED_GPUS).\n" +
			"Without ATOM_ACCELERATORS (not in a task of atom's: a Spark executor's container) every GPU NVML sees.\n" +
			"A failed check exits 3 saying why.",
		Flags: append(allocFlags(), &cli.BoolFlag{Name: "spark", Usage: "print Spark's resource discovery JSON"}),
		Action: func(c *cli.Context) error {
			a, err := readGPUs(c)
			if err != nil {
				return cli.Exit("atom: "+err.Error(), exitUsage)
			}
			if !c.IsSet("accelerators") && !a.SimulatedGPUs {
				// Not under atom (a Spark executor, whose container
				// runs Spark's entrypoint): the GPUs are those the
				// device plugin gave the container, all NVML sees.
				if devs, err := (gpu.NVML{}).Devices(); err == nil {
					for i := range devs {
						a.GPU.Accelerators = append(a.GPU.Accelerators, i)
					}
				}
			}
			res, err := gpu.Preflight(lister(a), a.GPU)
			if err != nil {
				return cli.Exit("atom: "+err.Error(), exitPreflight)
			}
			r := sparkResource{Name: "gpu", Addresses: []string{}}
			for i := range res.Devices {
				r.Addresses = append(r.Addresses, strconv.Itoa(i))
			}
			if c.Bool("spark") {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s\n", b)
				return nil
			}
			for i, d := range res.Devices {
				fmt.Fprintf(c.App.Writer, "%d\t%d\t%s\t%s\n", i, d.Index, d.UUID, d.Name)
			}
			return nil
		},
	}
}
