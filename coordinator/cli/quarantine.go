package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/structs"
)

func nodeReleaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "return quarantined accelerators to service once the hardware is fixed (admins)",
		ArgsUsage: "NAME",
		UsageText: "coordinator node release [--accelerators 0,1] NAME",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "accelerators", Usage: "comma-separated accelerator indices (default: every quarantined one)"},
			outputFlag(),
		},
		Action: nodeRelease,
	}
}

func nodeRelease(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	var accels []int
	for _, s := range strings.Split(c.String("accelerators"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 {
			// The node's own range the coordinator checks.
			return usagef("--accelerators: %q is not an accelerator index: use comma-separated indices from 0, such as 0,1", s)
		}
		accels = append(accels, i)
	}
	res, err := newClient(c).ReleaseNode(c.Context, structs.NodeID(a[0]), accels)
	if err != nil {
		return err
	}
	return show(c, res, func(w io.Writer) {
		switch {
		case len(res.Released) > 0:
			fmt.Fprintf(w, "node %s: released accelerators %s; still quarantined: %s\n", a[0], indices(res.Released), none(indices(res.Quarantined)))
		case len(accels) == 0:
			fmt.Fprintf(w, "node %s has no quarantined accelerators: nothing released\n", a[0])
		default:
			fmt.Fprintf(w, "node %s: accelerators %s were not quarantined: nothing released; quarantined: %s\n", a[0], indices(accels), none(indices(res.Quarantined)))
		}
	})
}

// quarantinedCell is node n's quarantined accelerators for tables.
func quarantinedCell(n *structs.Node) string {
	idx := make([]int, len(n.Quarantined))
	for i, q := range n.Quarantined {
		idx[i] = q.Accel
	}
	return indices(idx)
}

func indices(idx []int) string {
	s := make([]string, len(idx))
	for i, v := range idx {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func none(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
