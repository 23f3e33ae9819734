// Package mpi is the MPI job type. Replica 0 is the launcher: it waits
// until every worker of the current attempt has reported a launch
// endpoint (never before, and never an earlier attempt's),
// writes a hostfile from the gang's placement and runs mpirun with
// `atom rsh` as its remote-launch agent, so images need no sshd. The
// other replicas only serve those launches (atom does that) and end when
// what was launched on them ends.
//
// Host names in the hostfile are the workers' replicas (HostName); the
// launcher's own slots are "localhost", where mpirun starts ranks itself.
package mpi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Version is this job type's version.
const Version = "1.0.0"

// Defaults of the spec's mpi section.
const (
	DefaultStartTimeout = 10 * time.Minute
	pollEvery           = 500 * time.Millisecond
)

// Files the launcher writes in its working directory.
const (
	HostfileName = "mpi-hostfile"
	HostsName    = "mpi-hosts.json" // host -> launch endpoint, for atom rsh
)

// JobType is the MPI job type.
type JobType struct {
	// Poll is the peer-polling period; pollEvery when zero.
	Poll time.Duration
	// Now and Ticks stand in for the clock and the poll timer in tests.
	Now   func() time.Time
	Ticks <-chan time.Time
}

// New returns the MPI job type.
func New() plugin.JobType { return JobType{} }

// Info implements plugin.JobType.
func (JobType) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: string(structs.KindMPI), APIVersions: []string{"v1"}, Version: Version}, nil
}

// Prepare implements plugin.JobType.
func (j JobType) Prepare(ctx context.Context, _ string, t plugin.Task) (plugin.Exec, error) {
	if t.Replica > 0 {
		return plugin.Exec{ServeLaunches: true}, nil
	}
	if len(t.Command) == 0 {
		return plugin.Exec{}, fmt.Errorf("the job has no command: give the MPI program (and args) in its spec")
	}
	o, err := options(t)
	if err != nil {
		return plugin.Exec{}, err
	}
	var workers []wire.Peer
	if t.Replicas > 1 {
		if workers, err = j.waitForWorkers(ctx, t, o.StartTimeout); err != nil {
			return plugin.Exec{}, err
		}
	}
	hostfile, hosts, err := writeHosts(t.Dir, workers, o.Slots)
	if err != nil {
		return plugin.Exec{}, err
	}
	ranks, err := writeLayout(t.Dir, t, workers, o)
	if err != nil {
		return plugin.Exec{}, err
	}
	return plugin.Exec{
		Argv: Argv(t, o, hostfile, loopback(workers)),
		Env:  map[string]string{"ATOM_RSH_HOSTS": hosts, RanksEnv: ranks},
	}, nil
}

// Options are the mpi section of a job, with defaults filled in.
type Options struct {
	Slots        int           // ranks per replica: accelerators, or 1
	MpirunArgs   []string      // added before the program
	StartTimeout time.Duration // how long the launcher waits for workers
}

// options reads the job's mpi section from the task.
func options(t plugin.Task) (Options, error) {
	o := Options{Slots: max(t.Accelerators, 1), StartTimeout: DefaultStartTimeout}
	if len(t.JobJSON) == 0 {
		return o, nil
	}
	var j struct {
		MPI *structs.MPIOptions `json:"mpi"`
	}
	if err := json.Unmarshal(t.JobJSON, &j); err != nil {
		return o, fmt.Errorf("read the job's mpi section: %w", err)
	}
	if j.MPI != nil {
		if j.MPI.SlotsPerReplica > 0 {
			o.Slots = int(j.MPI.SlotsPerReplica)
		}
		o.MpirunArgs = j.MPI.MpirunArgs
		if j.MPI.StartTimeout > 0 {
			o.StartTimeout = j.MPI.StartTimeout.D()
		}
	}
	return o, nil
}

// waitForWorkers polls the coordinator until replicas 1..n-1 of t's
// attempt have all reported a launch endpoint.
func (j JobType) waitForWorkers(ctx context.Context, t plugin.Task, timeout time.Duration) ([]wire.Peer, error) {
	var servers []*client.Client
	for _, a := range strings.Split(t.Coordinator, ",") {
		if a = strings.TrimSpace(a); a != "" {
			servers = append(servers, client.New(a, ""))
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no coordinator to ask for the workers: ATOM_COORDINATOR is empty")
	}
	every, now := j.Poll, j.Now
	if every == 0 {
		every = pollEvery
	}
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(timeout)
	var missing string
	for n := 0; ; n++ {
		// A follower that has not applied the attempt yet refuses its
		// tokens; a server may be down: move on to the next one.
		pl, err := servers[n%len(servers)].Peers(ctx, structs.TaskID(t.ID), t.Token)
		if err == nil {
			if pl.Attempt != t.Attempt {
				return nil, fmt.Errorf("the job moved on to attempt %d; this launcher belongs to attempt %d", structs.AttemptNumber(pl.Attempt), structs.AttemptNumber(t.Attempt))
			}
			var ready []wire.Peer
			if ready, missing = readyWorkers(pl.Peers, t.Replicas); missing == "" {
				return ready, nil
			}
		} else {
			missing = "the coordinator did not answer: " + err.Error()
		}
		if now().After(deadline) {
			return nil, fmt.Errorf("MPI workers not ready after %s: %s", timeout, missing)
		}
		if err := j.wait(ctx, every); err != nil {
			return nil, err
		}
	}
}

// wait waits a poll period (or the test's next tick).
func (j JobType) wait(ctx context.Context, every time.Duration) error {
	ticks := j.Ticks
	if ticks == nil {
		tm := time.NewTimer(every)
		defer tm.Stop()
		ticks = tm.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ticks:
		return nil
	}
}

// readyWorkers returns workers 1..n-1 in index order, or why not all are
// ready (naming the first that is not).
func readyWorkers(peers []wire.Peer, n int) ([]wire.Peer, string) {
	byIndex := map[int]wire.Peer{}
	for _, p := range peers {
		byIndex[p.Index] = p
	}
	out := make([]wire.Peer, 0, n-1)
	for i := 1; i < n; i++ {
		p, ok := byIndex[i]
		switch {
		case !ok:
			return nil, fmt.Sprintf("worker replica %d has not been placed", i)
		case p.Endpoint == "":
			return nil, fmt.Sprintf("worker replica %d (task %s, %s) has not reported a launch endpoint", i, p.Task, p.State)
		}
		out = append(out, p)
	}
	return out, ""
}

// HostName is a worker replica's name in the hostfile, where atom rsh
// finds its launch endpoint: short, whatever the job's name (Open MPI
// 4.1 aborts, "stack smashing detected", on host names of 58 characters
// or more, and task IDs reach 70).
func HostName(replica int) string { return "replica-" + strconv.Itoa(replica) }

// writeHosts writes the hostfile and the host -> endpoint map in dir.
func writeHosts(dir string, workers []wire.Peer, slots int) (hostfile, hosts string, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "localhost slots=%d\n", slots)
	m := map[string]string{}
	for _, w := range workers {
		fmt.Fprintf(&b, "%s slots=%d\n", HostName(w.Index), slots)
		m[HostName(w.Index)] = w.Endpoint
	}
	hostfile, hosts = filepath.Join(dir, HostfileName), filepath.Join(dir, HostsName)
	js, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(hostfile, []byte(b.String()), 0o644); err != nil {
		return "", "", fmt.Errorf("write the MPI hostfile: %w", err)
	}
	if err := os.WriteFile(hosts, js, 0o644); err != nil {
		return "", "", fmt.Errorf("write the MPI host map: %w", err)
	}
	return hostfile, hosts, nil
}

// loopback reports whether every worker listens on a loopback address:
// the whole gang is on this machine (the local backend).
func loopback(workers []wire.Peer) bool {
	for _, w := range workers {
		host, _, err := net.SplitHostPort(w.Endpoint)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// Argv is the mpirun line: np = replicas × slots over the hostfile, atom
// rsh as the launch agent, then the job's mpirun args and program. Ranks
// fill the hostfile's hosts in order (--map-by slot: rank r on replica
// r/slots, what a failure report relies on) unless the job's mpirunArgs
// choose the mapping. On one
// machine (all loopback) MPI traffic stays on lo and ranks are not bound
// to cores, since several "hosts" share the cores.
func Argv(t plugin.Task, o Options, hostfile string, local bool) []string {
	atom := t.Env["ATOM_BIN"]
	if atom == "" {
		atom = "atom"
	}
	argv := []string{"mpirun",
		"--hostfile", hostfile,
		"-np", strconv.Itoa(max(t.Replicas, 1) * o.Slots),
		"--mca", "plm_rsh_agent", atom + " rsh",
		// Only the launcher has the host map; workers must not launch
		// further daemons themselves (OpenMPI's tree spawn).
		"--mca", "plm_rsh_no_tree_spawn", "1",
		// orted daemonizes by default, which would detach the ranks from
		// the worker's atom: the worker would end while its ranks run.
		"--leave-session-attached",
	}
	if !UserMaps(o.MpirunArgs) {
		argv = append(argv, "--map-by", "slot")
	}
	if os.Geteuid() == 0 {
		argv = append(argv, "--allow-run-as-root")
	}
	if local {
		argv = append(argv, "--bind-to", "none",
			"--mca", "btl", "self,tcp",
			"--mca", "btl_tcp_if_include", "lo",
			"--mca", "oob_tcp_if_include", "lo")
	}
	argv = append(argv, o.MpirunArgs...)
	return append(argv, t.Command...)
}
