package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func quotaCommand() *cli.Command {
	return &cli.Command{
		Name:  "quota",
		Usage: "read and set public-pool quotas (scopes user:<name> and project:<name>)",
		Subcommands: []*cli.Command{
			{Name: "get", Usage: "show a scope's limits and usage", ArgsUsage: "SCOPE", Flags: []cli.Flag{outputFlag()}, Action: quotaGet},
			{Name: "list", Usage: "show every quota you may read", Flags: []cli.Flag{outputFlag()}, Action: quotaList},
			{Name: "set", Usage: "set a scope's limits and fair-share weight from a quota spec, or only its weight (admins)",
				UsageText: "coordinator quota set -f FILE [--weight W]\n   coordinator quota set --weight W SCOPE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "the quota spec (scope, limits, weight) in YAML or JSON (- for standard input)"},
					&cli.Float64Flag{Name: "weight", Usage: "the scope's fair-share weight (default 1): replaces the spec's, or, without -f, keeps the scope's limits"},
					outputFlag()}, Action: quotaSet},
		},
	}
}

func poolCommand() *cli.Command {
	return &cli.Command{
		Name:  "pool",
		Usage: "manage project pools",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list the project pools", Flags: []cli.Flag{outputFlag()}, Action: poolList},
			{Name: "set", Usage: "create or replace a pool from a pool spec (admins)", UsageText: "coordinator pool set -f FILE",
				Flags: []cli.Flag{fileFlag("the pool spec (name, project, members, lendIdle, maxPreemptNotice, minRuntime; the public pool: name and minRuntime)"), outputFlag()}, Action: poolSet},
			{Name: "delete", Usage: "delete a pool no node belongs to (admins)", ArgsUsage: "NAME", Action: poolDelete},
		},
	}
}

func nodeCommand() *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "manage nodes",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list the nodes and what their tasks hold", Flags: []cli.Flag{outputFlag()}, Action: nodeList},
			{Name: "set", Usage: "add or replace a node from a node spec (admins)", UsageText: "coordinator node set -f FILE",
				Description: "The spec is a node as a cluster config lists it (name, cluster, cpu, memory, accelerators or devices,\n" +
					"tags, taints, pool). Without cluster: the node goes into the only cluster; when there are several,\n" +
					"name one (a node already in a cluster stays there).",
				Flags: []cli.Flag{fileFlag("the node spec"), outputFlag()}, Action: nodeSet},
			{Name: "delete", Usage: "remove a node that runs nothing (admins)", ArgsUsage: "NAME", Action: nodeDelete},
			nodeReleaseCommand(),
		},
	}
}

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "manage clusters",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list the clusters", Flags: []cli.Flag{outputFlag()}, Action: clusterList},
			{Name: "get", Usage: "show a cluster; -o yaml writes a cluster spec that cluster set takes back", UsageText: "coordinator cluster get NAME",
				Flags: []cli.Flag{outputFlag()}, Action: clusterGet},
			{Name: "set", Usage: "add or replace a cluster from a cluster spec (admins)", UsageText: "coordinator cluster set -f FILE",
				Description: "The spec replaces the whole cluster: a field left out is removed (topology levels, redis,\n" +
					"the kubernetes settings). To change one field, start from the cluster as it is:\n" +
					"   coordinator cluster get -o yaml NAME > c.yaml; edit c.yaml; coordinator cluster set -f c.yaml\n" +
					"It says what it changed, such as: cluster local set: topology levels rack removed; redis added.",
				Flags: []cli.Flag{fileFlag("the cluster spec (name, backend, redis, topology, ...)"), outputFlag()}, Action: clusterSet},
			{Name: "delete", Usage: "delete a cluster no node is in and no unended job is pinned to (admins)", ArgsUsage: "NAME",
				Description: "Refused, naming them, while nodes are in the cluster (delete them first) or jobs that have\n" +
					"not ended are pinned to it (cancel them or let them end). A kubernetes cluster that the\n" +
					"servers' --cluster-config lists comes back at their next start: remove it there too.",
				Action: clusterDelete},
		},
	}
}

func noArgs(c *cli.Context) error {
	if c.NArg() != 0 {
		return usagef("usage: %s: it takes no arguments", c.Command.HelpName)
	}
	return nil
}

func quotaGet(c *cli.Context) error {
	a, err := args(c, "SCOPE")
	if err != nil {
		return err
	}
	q, err := newClient(c).Quota(c.Context, structs.Scope(a[0]))
	if err != nil {
		return err
	}
	return show(c, q, func(w io.Writer) { printQuotas(w, []wire.QuotaStatus{*q}) })
}

func quotaList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	qs, err := newClient(c).Quotas(c.Context)
	if err != nil {
		return err
	}
	return show(c, wire.QuotaList{Quotas: qs}, func(w io.Writer) { printQuotas(w, qs) })
}

func printQuotas(w io.Writer, qs []wire.QuotaStatus) {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no quotas")
		return
	}
	tw := tab(w)
	row(tw, "SCOPE", "RESOURCE", "USED", "LIMIT")
	for _, q := range qs {
		keys := map[structs.ResourceKey]bool{}
		for k := range q.Limits {
			keys[k] = true
		}
		for k := range q.Usage {
			keys[k] = true
		}
		if len(keys) == 0 {
			row(tw, q.Scope, "(none: every limit is 0)", "", "")
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			limit := "0"
			if v, ok := q.Limits[k]; ok {
				limit = amount(k, v)
			}
			row(tw, q.Scope, k, amount(k, q.Usage[k]), limit)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tab(w)
	row(tw, "SCOPE", "WEIGHT", "FAIR SHARE", "USAGE (DECAYED)", "OF ALL USAGE", "POSITION")
	for _, q := range qs {
		f := q.FairShare
		share, ofAll, position := pct(f.Share), pct(f.UsageShare), pct(f.Position)
		if idle(q) {
			// No quota and no usage: it can run nothing and ran nothing,
			// so a share (as if it competed) would only mislead.
			share, ofAll, position = "-", "-", "-"
		}
		row(tw, q.Scope, strconv.FormatFloat(f.Weight, 'g', -1, 64), share, gpuHours(f.Usage), ofAll, position)
	}
	tw.Flush()
}

// idle tells a scope with no quota (every limit 0), no quota usage and no
// fair-share usage.
func idle(q wire.QuotaStatus) bool {
	if len(q.Limits) > 0 || q.FairShare.Usage > 0 {
		return false
	}
	for _, v := range q.Usage {
		if v != 0 {
			return false
		}
	}
	return true
}

// withWeight returns quota spec with its weight replaced by w, the rest
// as written: read as the coordinator reads a spec (limits: {cpu: 010} is
// 10 cores, not octal 8). w is a weight structs.ValidWeight takes.
func withWeight(spec []byte, w float64) ([]byte, error) {
	root, err := structs.SpecRoot(spec, "quota spec")
	if err != nil {
		return nil, err
	}
	weight := &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(w, 'g', -1, 64)}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "weight" {
			root.Content[i+1] = weight
			return yaml.Marshal(root)
		}
	}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "weight"}, weight)
	return yaml.Marshal(root)
}

// weightOnly is a quota spec for scope with its current limits and
// weight w.
func weightOnly(c *cli.Context, scope structs.Scope, w float64) ([]byte, error) {
	q, err := newClient(c).Quota(c.Context, scope)
	if err != nil {
		return nil, err
	}
	limits := map[string]string{}
	for k, v := range q.Limits {
		limits[string(k)] = strconv.FormatInt(v, 10)
		if k == structs.KeyCPU {
			limits[string(k)] += "m"
		}
	}
	return json.Marshal(map[string]any{"scope": scope, "limits": limits, "weight": w})
}

// gpuHours writes GPU-seconds as GPU-hours: "2.5 GPU-h", "340 GPU-h".
func gpuHours(s float64) string {
	prec := 1
	if s >= 100*3600 {
		prec = 0
	}
	return strconv.FormatFloat(s/3600, 'f', prec, 64) + " GPU-h"
}

// pct writes a fraction as a whole percentage.
func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// quotaSet sets a quota from -f FILE, its weight replaced by --weight
// when given, or sets only the weight of a scope. A --weight the
// coordinator would refuse is refused first, alike with -f or without
// (without, NaN could not even be sent).
func quotaSet(c *cli.Context) error {
	w := c.Float64("weight")
	if c.IsSet("weight") {
		if err := structs.ValidWeight("--weight", w); err != nil {
			return usageError{err.Error()}
		}
	}
	var spec []byte
	var err error
	switch {
	case c.IsSet("file"):
		if err := noArgs(c); err != nil {
			return err
		}
		if spec, err = readSpec(c); err != nil {
			return err
		}
		if c.IsSet("weight") {
			if spec, err = withWeight(spec, w); err != nil {
				return sentSpec(c, "set", err)
			}
		}
	case c.IsSet("weight"):
		a, err := args(c, "SCOPE")
		if err != nil {
			return err
		}
		if spec, err = weightOnly(c, structs.Scope(a[0]), w); err != nil {
			return err
		}
	default:
		return usagef("usage: %s: give the quota spec (-f FILE), or --weight W and the scope", c.Command.HelpName)
	}
	cl := newClient(c)
	// The limits a file leaves out become 0: the set says which it
	// removed. Best effort: a quota not there yet, or a spec the
	// coordinator will refuse, has none to compare.
	var prev *wire.QuotaStatus
	if pq, err := structs.ParseQuotaSpec(spec); err == nil && c.IsSet("file") {
		prev, _ = cl.Quota(c.Context, pq.Scope)
	}
	q, err := cl.SetQuota(c.Context, spec)
	if err != nil && c.IsSet("file") {
		return sentSpec(c, "set", err)
	}
	if err != nil {
		return err
	}
	return show(c, q, func(w io.Writer) {
		fmt.Fprintf(w, "quota for %s set: %s%s\n", q.Scope, orNone(resourceList(q.Limits)), removedLimits(prev, q))
	})
}

// removedLimits names the limits of prev, a quota before it was set to
// q, that q no longer has: "; removed (a key not listed is 0): cpu,
// memory". "" when none is.
func removedLimits(prev, q *wire.QuotaStatus) string {
	if prev == nil || prev.Scope != q.Scope {
		return ""
	}
	var gone []string
	for k, v := range prev.Limits {
		if v > 0 && q.Limits[k] == 0 {
			gone = append(gone, string(k))
		}
	}
	if len(gone) == 0 {
		return ""
	}
	slices.Sort(gone)
	return "; removed (a key not listed is 0): " + strings.Join(gone, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none: every limit is 0)"
	}
	return s
}

func poolList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	pools, err := newClient(c).Pools(c.Context)
	if err != nil {
		return err
	}
	return show(c, wire.PoolList{Pools: pools}, func(w io.Writer) {
		if len(pools) == 0 {
			fmt.Fprintln(w, "no project pools (every node is in the public pool)")
			return
		}
		tw := tab(w)
		row(tw, "NAME", "PROJECT", "MEMBERS", "LENDS IDLE NODES", "MIN RUNTIME", "MAX NOTICE")
		for _, p := range pools {
			members := make([]string, len(p.Members))
			for i, m := range p.Members {
				members[i] = string(m)
			}
			run := "-"
			if p.MinRuntime > 0 {
				run = p.MinRuntime.D().String()
			}
			// The longest preemption notice its jobs may ask for.
			row(tw, p.Name, p.Project, strings.Join(members, ","), p.LendIdle, run, p.MaxNotice())
		}
		tw.Flush()
	})
}

func poolSet(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	p, err := newClient(c).SetPool(c.Context, spec)
	if err != nil {
		return sentSpec(c, "set", err)
	}
	return show(c, p, func(w io.Writer) { fmt.Fprintf(w, "pool %s set\n", p.Name) })
}

func poolDelete(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if err := newClient(c).DeletePool(c.Context, structs.PoolID(a[0])); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "pool %s deleted\n", a[0])
	return nil
}

func nodeList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	nodes, err := newClient(c).Nodes(c.Context)
	if err != nil {
		return err
	}
	return show(c, wire.NodeList{Nodes: nodes}, func(w io.Writer) {
		if len(nodes) == 0 {
			fmt.Fprintln(w, "no nodes")
			return
		}
		// DOMAINS only where some cluster has topology levels.
		topo := slices.ContainsFunc(nodes, func(n wire.NodeStatus) bool { return len(n.Domains) > 0 })
		tw := tab(w)
		head := []any{"NAME", "CLUSTER", "POOL", "STATE", "CPU", "MEMORY", "ACCELERATORS", "DEVICES", "QUARANTINED", "TASKS"}
		if topo {
			head = append(head, "DOMAINS")
		}
		row(tw, append(head, "TAGS")...)
		for _, n := range nodes {
			accels := ""
			if n.Capacity.Accels > 0 {
				accels = fmt.Sprintf("%s %d/%d", n.Capacity.AccelType, n.Allocated.Accels, n.Capacity.Accels)
			}
			var devices []string // "jetson-xavier 1/2", held of all
			for _, d := range slices.Sorted(maps.Keys(n.Capacity.Devices)) {
				devices = append(devices, fmt.Sprintf("%s %d/%d", d, n.Allocated.Devices[d], n.Capacity.Devices[d]))
			}
			cells := []any{n.Name, n.Cluster, n.PoolName(), n.State,
				structs.FormatMilliCPU(n.Allocated.MilliCPU) + "/" + structs.FormatMilliCPU(n.Capacity.MilliCPU),
				structs.FormatBytes(n.Allocated.Memory) + "/" + structs.FormatBytes(n.Capacity.Memory),
				accels, strings.Join(devices, ","), quarantinedCell(&n.Node), n.Tasks}
			if topo {
				var ds []string // zone=z1,rack=r3
				for _, d := range n.Domains {
					ds = append(ds, structs.LevelName(d.Level)+"="+d.Domain)
				}
				cells = append(cells, strings.Join(ds, ","))
			}
			row(tw, append(cells, tags(n.Tags))...)
		}
		tw.Flush()
	})
}

func tags(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == "" {
			out = append(out, k)
		} else {
			out = append(out, k+"="+m[k])
		}
	}
	return strings.Join(out, ",")
}

func nodeSet(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	n, err := newClient(c).SetNode(c.Context, spec)
	if err != nil {
		return sentSpec(c, "set", err)
	}
	return show(c, n, func(w io.Writer) { fmt.Fprintf(w, "node %s set: %s\n", n.Name, n.Capacity) })
}

func nodeDelete(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if err := newClient(c).DeleteNode(c.Context, structs.NodeID(a[0])); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "node %s deleted\n", a[0])
	return nil
}

func clusterList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	clusters, err := newClient(c).Clusters(c.Context)
	if err != nil {
		return err
	}
	return show(c, wire.ClusterList{Clusters: clusters}, func(w io.Writer) { printClusters(w, clusters) })
}

func clusterGet(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	cl, err := newClient(c).Cluster(c.Context, structs.ClusterID(a[0]))
	if err != nil {
		return err
	}
	return show(c, cl, func(w io.Writer) { printClusters(w, []*structs.Cluster{cl}) })
}

func printClusters(w io.Writer, clusters []*structs.Cluster) {
	if len(clusters) == 0 {
		fmt.Fprintln(w, "no clusters")
		return
	}
	topo := slices.ContainsFunc(clusters, func(c *structs.Cluster) bool { return c.Topology != nil })
	tw := tab(w)
	if topo {
		row(tw, "NAME", "BACKEND", "REDIS", "TOPOLOGY")
	} else {
		row(tw, "NAME", "BACKEND", "REDIS")
	}
	for _, cl := range clusters {
		if !topo {
			row(tw, cl.Name, cl.Backend, cl.Redis)
			continue
		}
		var levels []string
		if cl.Topology != nil {
			levels = cl.Topology.Levels
		}
		row(tw, cl.Name, cl.Backend, cl.Redis, strings.Join(levels, ","))
	}
	tw.Flush()
}

func clusterSet(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	api := newClient(c)
	var before *structs.Cluster
	var others []*structs.Cluster
	if name, _ := structs.SpecField(spec, "cluster spec", "name"); name != "" {
		before, err = api.Cluster(c.Context, structs.ClusterID(name))
		if err != nil && !errors.Is(err, client.ErrNotFound) {
			return err
		}
		if before == nil {
			if others, err = api.Clusters(c.Context); err != nil {
				return err
			}
		}
	}
	cl, err := api.SetCluster(c.Context, spec)
	if err != nil {
		return sentSpec(c, "set", err)
	}
	said := clusterChanges(before, cl)
	if before == nil && len(others) > 0 {
		said = clusterAdded(cl.Name, others)
	}
	if f, _ := format(c); f != formatTable {
		fmt.Fprintln(c.App.ErrWriter, said)
	}
	return show(c, cl, func(w io.Writer) { fmt.Fprintln(w, said) })
}

// clusterAdded says plainly that cluster set made a new cluster beside
// others (a typo in a name makes one), what that changes, and how to undo it.
func clusterAdded(name structs.ClusterID, others []*structs.Cluster) string {
	names := make([]string, len(others))
	for i, o := range others {
		names[i] = string(o.Name)
	}
	which := "cluster " + names[0]
	if len(names) > 1 {
		which = "clusters " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("cluster %s added: a new cluster, beside %s; node specs must now name their cluster. "+
		"If you meant to change an existing one, set it by its name; coordinator cluster delete %s removes this one",
		name, which, name)
}

func clusterDelete(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if err := newClient(c).DeleteCluster(c.Context, structs.ClusterID(a[0])); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "cluster %s deleted\n", a[0])
	return nil
}

// clusterChanges says what setting a cluster changed: a spec replaces
// the whole cluster, so a field left out of it is removed.
func clusterChanges(old, cl *structs.Cluster) string {
	if old == nil {
		return fmt.Sprintf("cluster %s added", cl.Name)
	}
	var out []string
	levels := func(c *structs.Cluster) []string {
		if c.Topology == nil {
			return nil
		}
		return c.Topology.Levels
	}
	ol, nl := levels(old), levels(cl)
	var gone, added []string
	for _, l := range ol {
		if !slices.Contains(nl, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range nl {
		if !slices.Contains(ol, l) {
			added = append(added, l)
		}
	}
	switch {
	case len(gone) > 0 || len(added) > 0:
		var said []string
		if len(gone) > 0 {
			said = append(said, strings.Join(gone, ", ")+" removed")
		}
		if len(added) > 0 {
			said = append(said, strings.Join(added, ", ")+" added")
		}
		out = append(out, "topology levels "+strings.Join(said, ", "))
	case !slices.Equal(ol, nl):
		out = append(out, "topology levels now "+strings.Join(nl, ", "))
	}
	field := func(name, was, is string) {
		switch {
		case was == is:
		case was == "":
			out = append(out, name+" added")
		case is == "":
			out = append(out, name+" removed (was "+was+")")
		default:
			out = append(out, name+" changed from "+was+" to "+is)
		}
	}
	field("backend", old.Backend, cl.Backend)
	field("redis", old.Redis, cl.Redis)
	field("kubeconfig", old.Kubeconfig, cl.Kubeconfig)
	field("namespace", old.Namespace, cl.Namespace)
	field("image", old.Image, cl.Image)
	field("serviceAccount", old.ServiceAccount, cl.ServiceAccount)
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	field("qps", num(old.QPS), num(cl.QPS))
	field("burst", num(old.Burst), num(cl.Burst))
	on := func(b bool) string {
		if b {
			return "true"
		}
		return ""
	}
	field("heartbeatPods", on(old.HeartbeatPods), on(cl.HeartbeatPods))
	if len(out) == 0 {
		return fmt.Sprintf("cluster %s set: nothing changed", cl.Name)
	}
	return fmt.Sprintf("cluster %s set: %s", cl.Name, strings.Join(out, "; "))
}
