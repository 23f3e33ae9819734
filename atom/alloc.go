package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
)

// allocation is what the coordinator gave this task.
type allocation struct {
	Coordinator string
	Task, Token string
	Job         string
	Replica     int
	Replicas    int
	GPU         gpu.Want
}

// readAllocation reads the allocation flags (and so the ATOM_* env).
func readAllocation(c *cli.Context) (allocation, error) {
	a := allocation{
		Coordinator: strings.TrimSpace(c.String("coordinator")),
		Task:        c.String("task"), Token: c.String("token"), Job: c.String("job"),
		Replica: c.Int("replica"), Replicas: c.Int("replicas"),
		GPU: gpu.Want{Type: strings.TrimSpace(c.String("accel-type"))},
	}
	for _, s := range strings.Split(c.String("accelerators"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 {
			return a, fmt.Errorf("ATOM_ACCELERATORS: %q is not a device index: use comma-separated indices such as 0,1", s)
		}
		a.GPU.Accelerators = append(a.GPU.Accelerators, i)
	}
	if a.Coordinator != "" && (a.Task == "" || a.Token == "") {
		return a, fmt.Errorf("ATOM_COORDINATOR is set but ATOM_TASK_ID or ATOM_TOKEN is not: set both, or unset ATOM_COORDINATOR to run standalone")
	}
	return a, nil
}
