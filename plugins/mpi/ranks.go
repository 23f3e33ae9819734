package mpi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/wire"
)

// The launcher's atom reads the rank layout from the file RanksEnv names,
// to say on which replica a failed rank ran (see Watcher).
const (
	RanksEnv  = "ATOM_MPI_RANKS"
	RanksName = "mpi-ranks.json"
)

// Layout says which replica runs which ranks.
type Layout struct {
	// Mapped: atom's mpirun line pinned the mapping (--map-by slot), so
	// rank r runs on Replicas[r/Slots]. False when the job's mpirunArgs
	// choose the mapping: then only a host mpirun names tells the replica.
	Mapped bool `json:"mapped"`
	Slots  int  `json:"slotsPerReplica"`
	// Replicas in hostfile order: the launcher (replica 0) first.
	Replicas []Replica `json:"replicas"`
}

// Replica is one line of the hostfile.
type Replica struct {
	Index int    `json:"replica"`
	Task  string `json:"task"`
	Node  string `json:"node,omitempty"`
	Host  string `json:"host"` // its name in the hostfile (HostName, "localhost")
}

// mappingArgs are mpirun options (either dash form) that choose where
// ranks run; with any of them the job, not atom, maps ranks.
var mappingArgs = map[string]bool{
	"map-by": true, "rank-by": true, "bynode": true, "byslot": true, "npernode": true, "N": true,
	"pernode": true, "npersocket": true, "ppr": true, "rankfile": true, "rf": true, "host": true,
	"H": true, "hostfile": true, "machinefile": true, "default-hostfile": true, "loadbalance": true,
	"seq": true, "cpus-per-proc": true, "cpus-per-rank": true,
}

// UserMaps reports whether mpirun args choose the rank mapping
// themselves (--map-by, --npernode, a rankfile, an rmaps MCA setting...).
func UserMaps(args []string) bool {
	for i, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && mappingArgs[name] {
			return true
		}
		if (name == "mca" || name == "gmca") && i+1 < len(args) && strings.HasPrefix(args[i+1], "rmaps") {
			return true
		}
		if name == "x" && i+1 < len(args) && strings.HasPrefix(args[i+1], "OMPI_MCA_rmaps") {
			return true
		}
	}
	return false
}

// writeLayout writes the rank layout next to the hostfile and returns its
// path.
func writeLayout(dir string, t plugin.Task, workers []wire.Peer, o Options) (string, error) {
	l := Layout{Mapped: !UserMaps(o.MpirunArgs), Slots: o.Slots,
		Replicas: []Replica{{Index: 0, Task: t.ID, Node: t.Env["ATOM_NODE"], Host: "localhost"}}}
	for _, w := range workers {
		l.Replicas = append(l.Replicas, Replica{Index: w.Index, Task: string(w.Task), Node: string(w.Node), Host: HostName(w.Index)})
	}
	js, _ := json.MarshalIndent(l, "", "  ")
	path := filepath.Join(dir, RanksName)
	if err := os.WriteFile(path, js, 0o644); err != nil {
		return "", fmt.Errorf("write the MPI rank layout: %w", err)
	}
	return path, nil
}

// ReadLayout reads the file writeLayout wrote.
func ReadLayout(path string) (Layout, error) {
	var l Layout
	b, err := os.ReadFile(path)
	if err != nil {
		return l, fmt.Errorf("read the MPI rank layout: %w", err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("read the MPI rank layout %s: %w", path, err)
	}
	return l, nil
}

// replicaOf finds the replica of rank on host (as mpirun named it; ""
// when it did not). localHost is the launcher's host name: mpirun names
// its own node so, not "localhost".
func (l Layout) replicaOf(rank int, host, localHost string) (Replica, bool) {
	if host != "" {
		for _, r := range l.Replicas {
			if r.Host == host || r.Index == 0 && (host == localHost || host == "localhost") {
				return r, true
			}
		}
	}
	if l.Mapped && l.Slots > 0 && rank >= 0 && rank/l.Slots < len(l.Replicas) {
		return l.Replicas[rank/l.Slots], true
	}
	return Replica{}, false
}

// Explain says which rank failed, how, and on which replica, task and
// node, e.g. "MPI rank 3 exited with code 7 on replica 1 (task
// j-1-bb, node cpu-2)".
func (l Layout) Explain(f Failure, localHost string) string {
	if f.Launch {
		return l.explainLaunch(f)
	}
	msg := fmt.Sprintf("MPI rank %d %s", f.Rank, f.How)
	r, ok := l.replicaOf(f.Rank, f.Host, localHost)
	switch {
	case ok && r.Node != "":
		return fmt.Sprintf("%s on replica %d (task %s, node %s)", msg, r.Index, r.Task, r.Node)
	case ok:
		return fmt.Sprintf("%s on replica %d (task %s)", msg, r.Index, r.Task)
	case f.Host != "":
		return fmt.Sprintf("%s on host %s (its replica is unknown)", msg, f.Host)
	case !l.Mapped && len(l.Replicas) > 0:
		return msg + " (its replica is unknown: the job's mpirunArgs choose how ranks are mapped)"
	}
	return msg + " (its replica is unknown)"
}

// explainLaunch says on which replica atom rsh could not start Open MPI's
// daemon, and why: "atom rsh could not start Open MPI's daemon on replica
// 1 (task j-1-bb, node cpu-2): launch on 10.0.0.7:7077: ...".
func (l Layout) explainLaunch(f Failure) string {
	const msg = "atom rsh could not start Open MPI's daemon"
	for _, r := range l.Replicas {
		if f.Host == "" || r.Host != f.Host {
			continue
		}
		if r.Node != "" {
			return fmt.Sprintf("%s on replica %d (task %s, node %s): %s", msg, r.Index, r.Task, r.Node, f.How)
		}
		return fmt.Sprintf("%s on replica %d (task %s): %s", msg, r.Index, r.Task, f.How)
	}
	if f.Host != "" {
		return fmt.Sprintf("%s on host %s: %s", msg, f.Host, f.How)
	}
	return msg + ": " + f.How
}
