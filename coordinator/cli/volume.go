package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func volumeCommand() *cli.Command {
	clusterFlag := &cli.StringFlag{Name: "cluster", Usage: "the kubernetes cluster (needed when there are several)"}
	return &cli.Command{
		Name:  "volume",
		Usage: "manage persistent volumes (PersistentVolumeClaims of class ceph-rbd that jobs name in volumes: claim)",
		Subcommands: []*cli.Command{
			{Name: "create", Usage: "create a persistent volume", ArgsUsage: "NAME",
				UsageText: "coordinator volume create NAME --size 100Gi [--cluster C]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "size", Usage: "its size, a quantity such as 100Gi"}, clusterFlag, outputFlag()},
				Action:    volumeCreate},
			{Name: "list", Usage: "list the persistent volumes and the jobs using them", Flags: []cli.Flag{outputFlag()}, Action: volumeList},
			{Name: "delete", Usage: "delete a persistent volume no job uses (its owner or an admin)", ArgsUsage: "NAME",
				Flags: []cli.Flag{clusterFlag}, Action: volumeDelete},
		},
	}
}

// nameAndFlags returns the NAME argument and the values of the named
// string flags, which may come before NAME or after it (coordinator
// volume create NAME --size 100Gi).
func nameAndFlags(c *cli.Context, flags ...string) (string, map[string]string, error) {
	vals := map[string]string{}
	for _, f := range flags {
		vals[f] = c.String(f)
	}
	a := c.Args().Slice()
	if len(a) == 0 || strings.HasPrefix(a[0], "-") {
		return "", nil, usagef("usage: %s NAME", c.Command.HelpName)
	}
	if err := nonEmpty(c, c.Command.HelpName+" NAME", "NAME", a[0]); err != nil {
		return "", nil, err
	}
	fs := flag.NewFlagSet(c.Command.HelpName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ptrs := map[string]*string{}
	for _, f := range flags {
		ptrs[f] = fs.String(f, vals[f], "")
	}
	if err := fs.Parse(a[1:]); err != nil {
		return "", nil, usagef("%s: %v", c.Command.HelpName, err)
	}
	if fs.NArg() > 0 {
		return "", nil, usagef("usage: %s NAME: one name only, got also %s", c.Command.HelpName, strings.Join(fs.Args(), " "))
	}
	for f, p := range ptrs {
		vals[f] = *p
	}
	return a[0], vals, nil
}

func volumeCreate(c *cli.Context) error {
	name, f, err := nameAndFlags(c, "size", "cluster", "output", "o")
	if err != nil {
		return err
	}
	if f["size"] == "" {
		return usagef("usage: %s NAME --size SIZE: give its size, such as --size 100Gi", c.Command.HelpName)
	}
	for _, o := range []string{f["output"], f["o"]} {
		if o != c.String("output") {
			if err := c.Set("output", o); err != nil {
				return usagef("%v", err)
			}
		}
	}
	v, err := newClient(c).CreateVolume(c.Context, wire.VolumeSpec{Name: name, Size: structs.Quantity(f["size"]),
		Cluster: structs.ClusterID(f["cluster"])})
	if err != nil {
		return err
	}
	return show(c, v, func(w io.Writer) {
		fmt.Fprintf(w, "volume %s created in cluster %s: %s of class %s\n", v.Name, v.Cluster, structs.FormatBytes(v.Size), v.Class)
	})
}

func volumeList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	vols, err := newClient(c).Volumes(c.Context)
	if err != nil {
		return err
	}
	return show(c, wire.VolumeList{Volumes: vols}, func(w io.Writer) {
		if len(vols) == 0 {
			fmt.Fprintln(w, "no volumes")
			return
		}
		tw := tab(w)
		row(tw, "NAME", "CLUSTER", "SIZE", "CLASS", "PHASE", "OWNER", "USED BY")
		for _, v := range vols {
			used := make([]string, len(v.UsedBy))
			for i, j := range v.UsedBy {
				used[i] = string(j)
			}
			row(tw, v.Name, v.Cluster, structs.FormatBytes(v.Size), v.Class, v.Phase, v.Owner, strings.Join(used, ","))
		}
		tw.Flush()
	})
}

func volumeDelete(c *cli.Context) error {
	name, f, err := nameAndFlags(c, "cluster")
	if err != nil {
		return err
	}
	if err := newClient(c).DeleteVolume(c.Context, name, structs.ClusterID(f["cluster"])); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "volume %s deleted\n", name)
	return nil
}
