package mpi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func TestReadyWorkersNamesTheFirstMissing(t *testing.T) {
	peers := []wire.Peer{
		{Task: "j-0-aa", Index: 0, State: structs.TaskRunning},
		{Task: "j-2-cc", Index: 2, State: structs.TaskRunning, Endpoint: "127.0.0.1:4002"},
		{Task: "j-1-bb", Index: 1, State: structs.TaskScheduled},
	}
	_, why := readyWorkers(peers, 3)
	assert.Equal(t, "worker replica 1 (task j-1-bb, Scheduled) has not reported a launch endpoint", why)
	_, why = readyWorkers(peers[:2], 3)
	assert.Equal(t, "worker replica 1 has not been placed", why)

	peers[2].Endpoint, peers[2].State = "127.0.0.1:4001", structs.TaskRunning
	ready, why := readyWorkers(peers, 3)
	require.Empty(t, why)
	assert.Equal(t, []structs.TaskID{"j-1-bb", "j-2-cc"}, []structs.TaskID{ready[0].Task, ready[1].Task})
	assert.True(t, loopback(ready))
	ready[1].Endpoint = "10.0.0.7:7070"
	assert.False(t, loopback(ready))
}

func TestHostsAndArgv(t *testing.T) {
	dir := t.TempDir()
	workers := []wire.Peer{{Task: "j-1-bb", Index: 1, Endpoint: "127.0.0.1:4001"}, {Task: "j-2-cc", Index: 2, Endpoint: "127.0.0.1:4002"}}
	hostfile, hosts, err := writeHosts(dir, workers, 2)
	require.NoError(t, err)
	b, err := os.ReadFile(hostfile)
	require.NoError(t, err)
	assert.Equal(t, "localhost slots=2\nreplica-1 slots=2\nreplica-2 slots=2\n", string(b))
	b, err = os.ReadFile(hosts)
	require.NoError(t, err)
	assert.JSONEq(t, `{"replica-1":"127.0.0.1:4001","replica-2":"127.0.0.1:4002"}`, string(b))

	task := plugin.Task{Replicas: 3, Command: []string{"./allreduce", "x"}, Env: map[string]string{"ATOM_BIN": "/app/atom"}}
	o := Options{Slots: 2, MpirunArgs: []string{"-x", "NCCL_DEBUG"}}
	root := []string(nil)
	if os.Geteuid() == 0 {
		root = []string{"--allow-run-as-root"}
	}
	want := append(append([]string{"mpirun", "--hostfile", hostfile, "-np", "6", "--mca", "plm_rsh_agent", "/app/atom rsh", "--mca", "plm_rsh_no_tree_spawn", "1", "--leave-session-attached", "--map-by", "slot"}, root...),
		"-x", "NCCL_DEBUG", "./allreduce", "x")
	assert.Equal(t, want, Argv(task, o, hostfile, false))
	local := Argv(task, o, hostfile, true)
	assert.Equal(t, []string{"--bind-to", "none", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"},
		local[len(want)-4:len(want)-4+11])

	// The job's own mapping: atom pins none.
	o.MpirunArgs = []string{"--map-by", "node"}
	want = append(append([]string{"mpirun", "--hostfile", hostfile, "-np", "6", "--mca", "plm_rsh_agent", "/app/atom rsh", "--mca", "plm_rsh_no_tree_spawn", "1", "--leave-session-attached"}, root...),
		"--map-by", "node", "./allreduce", "x")
	assert.Equal(t, want, Argv(task, o, hostfile, false))
}

// The launcher writes which replica runs which ranks, in hostfile order,
// for atom to name a failed rank's replica.
func TestLayoutFile(t *testing.T) {
	dir := t.TempDir()
	workers := []wire.Peer{{Task: "j-1-bb", Index: 1, Node: "cpu-2", Endpoint: "127.0.0.1:4001"}, {Task: "j-2-cc", Index: 2, Node: "cpu-1", Endpoint: "127.0.0.1:4002"}}
	task := plugin.Task{ID: "j-0-aa", Replicas: 3, Env: map[string]string{"ATOM_NODE": "cpu-1"}}
	path, err := writeLayout(dir, task, workers, Options{Slots: 2})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, RanksName), path)
	l, err := ReadLayout(path)
	require.NoError(t, err)
	assert.Equal(t, Layout{Mapped: true, Slots: 2, Replicas: []Replica{
		{Index: 0, Task: "j-0-aa", Node: "cpu-1", Host: "localhost"},
		{Index: 1, Task: "j-1-bb", Node: "cpu-2", Host: "replica-1"},
		{Index: 2, Task: "j-2-cc", Node: "cpu-1", Host: "replica-2"},
	}}, l)
	path, err = writeLayout(dir, task, workers, Options{Slots: 2, MpirunArgs: []string{"-npernode", "1"}})
	require.NoError(t, err)
	l, err = ReadLayout(path)
	require.NoError(t, err)
	assert.False(t, l.Mapped)

	_, err = ReadLayout(filepath.Join(dir, "missing.json"))
	assert.ErrorContains(t, err, "read the MPI rank layout: open "+filepath.Join(dir, "missing.json"))
}

func TestOptionsFromTheJob(t *testing.T) {
	o, err := options(plugin.Task{Accelerators: 8})
	require.NoError(t, err)
	assert.Equal(t, Options{Slots: 8, StartTimeout: DefaultStartTimeout}, o)
	o, err = options(plugin.Task{JobJSON: []byte(`{"mpi":{"slotsPerReplica":3,"mpirunArgs":["-x","A"],"startTimeout":60000000000}}`)})
	require.NoError(t, err)
	assert.Equal(t, Options{Slots: 3, MpirunArgs: []string{"-x", "A"}, StartTimeout: time.Minute}, o)
}

func TestWorkersPrepareToServe(t *testing.T) {
	ex, err := New().Prepare(context.Background(), "v1", plugin.Task{Replica: 1, Replicas: 2})
	require.NoError(t, err)
	assert.Equal(t, plugin.Exec{ServeLaunches: true}, ex)
	_, err = New().Prepare(context.Background(), "v1", plugin.Task{Replicas: 2, Dir: filepath.Join(t.TempDir())})
	assert.EqualError(t, err, "the job has no command: give the MPI program (and args) in its spec")
}
