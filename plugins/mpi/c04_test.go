package mpi_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/plugins/mpi"
)

// c04 is a 3-replica MPI job placed on a real API over the real state
// machine; it returns the env, the job and its tasks by replica.
func c04(t *testing.T, extra string) (*apitest.Env, structs.JobID, []*structs.Task) {
	e := apitest.NewEnv(t, "")
	c := client.New(e.URL(), e.Tokens["u1"])
	spec := "{kind: mpi, name: j, replicas: 3, resources: {cpu: '1', memory: 1Gi}, command: [./allreduce]" + extra + "}"
	sub, err := c.SubmitJob(context.Background(), []byte(spec), "c04")
	require.NoError(t, err)
	e.Store.Schedule(t, apitest.T0)
	tasks := make([]*structs.Task, 3)
	for _, tk := range e.Store.Tasks(sub.JobID) {
		tasks[tk.Index] = tk
	}
	require.NotNil(t, tasks[2])
	return e, sub.JobID, tasks
}

func launcherTask(e *apitest.Env, id structs.JobID, t0 *structs.Task) plugin.Task {
	js, _ := json.Marshal(e.Store.Job(id))
	return plugin.Task{Job: string(id), ID: string(t0.ID), Kind: "mpi", Replicas: 3, Attempt: t0.Attempt,
		Command: []string{"./allreduce"}, Coordinator: e.URL(), Token: e.Store.Tokens()[t0.ID], JobJSON: js,
		Env: map[string]string{"ATOM_BIN": "/app/atom"}}
}

func ready(t *testing.T, e *apitest.Env, tk *structs.Task, endpoint string) {
	t.Helper()
	require.NoError(t, e.Store.Heartbeat(tk.ID, e.Store.Tokens()[tk.ID], structs.TaskEvent{Task: tk.ID, State: structs.TaskRunning, Endpoint: endpoint, Time: apitest.T0}))
}

// finish keeps the launcher polling until Prepare returns.
func finish[T any](ticks chan time.Time, done chan T) T {
	for {
		select {
		case ticks <- apitest.T0:
		case r := <-done:
			return r
		}
	}
}

// C04: the launcher starts mpirun only once every worker of the current
// attempt has reported ready (a launch endpoint), however late. A tick is
// taken only by a launcher that has finished its poll and waits again, so
// two ticks after a change mean a whole poll saw it.
func TestC04LauncherWaitsForEveryWorker(t *testing.T) {
	e, id, tasks := c04(t, "")
	ticks := make(chan time.Time)
	jt := mpi.JobType{Ticks: ticks}
	task := launcherTask(e, id, tasks[0])
	task.Dir = t.TempDir()
	type result struct {
		ex  plugin.Exec
		err error
	}
	done := make(chan result, 1)
	go func() {
		ex, err := jt.Prepare(context.Background(), "v1", task)
		done <- result{ex, err}
	}()
	ticks <- apitest.T0 // polled once: nobody ready
	ready(t, e, tasks[1], "127.0.0.1:4001")
	ticks <- apitest.T0
	ticks <- apitest.T0 // a poll with worker 1 ready ended, and the launcher still waits: worker 2 is slow
	select {
	case r := <-done:
		t.Fatalf("the launcher went ahead before worker 2 was ready: %+v", r)
	default:
	}
	ready(t, e, tasks[2], "127.0.0.1:4002")
	r := finish(ticks, done)
	require.NoError(t, r.err)
	assert.Contains(t, strings.Join(r.ex.Argv, " "), "-np 3 ")
	assert.Equal(t, task.Dir+"/"+mpi.HostsName, r.ex.Env["ATOM_RSH_HOSTS"])
	assert.Equal(t, task.Dir+"/"+mpi.RanksName, r.ex.Env[mpi.RanksEnv])
	l, err := mpi.ReadLayout(r.ex.Env[mpi.RanksEnv])
	require.NoError(t, err)
	assert.Equal(t, []mpi.Replica{{Index: 0, Task: string(tasks[0].ID), Host: "localhost"},
		{Index: 1, Task: string(tasks[1].ID), Node: string(tasks[1].Node), Host: "replica-1"},
		{Index: 2, Task: string(tasks[2].ID), Node: string(tasks[2].Node), Host: "replica-2"}}, l.Replicas)
}

// C04 (requirement): a worker that never becomes ready fails the launcher
// after the start timeout, with a reason naming that worker.
func TestC04WorkerNeverReady(t *testing.T) {
	e, id, tasks := c04(t, ", mpi: {startTimeout: 1m}")
	var late atomic.Bool
	ticks := make(chan time.Time)
	jt := mpi.JobType{Ticks: ticks, Now: func() time.Time {
		if late.Load() {
			return apitest.T0.Add(time.Minute + time.Second)
		}
		return apitest.T0
	}}
	task := launcherTask(e, id, tasks[0])
	task.Dir = t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := jt.Prepare(context.Background(), "v1", task)
		done <- err
	}()
	ready(t, e, tasks[1], "127.0.0.1:4001")
	ticks <- apitest.T0
	ticks <- apitest.T0
	late.Store(true)
	err := finish(ticks, done)
	require.Error(t, err)
	assert.Equal(t, "MPI workers not ready after 1m0s: worker replica 2 (task "+string(tasks[2].ID)+", Scheduled) has not reported a launch endpoint", err.Error())
}

// A launcher of an ended attempt is refused by the coordinator: nothing
// from an earlier attempt is reused (C04 variant B).
func TestC04StaleLauncherRefused(t *testing.T) {
	e, id, tasks := c04(t, "")
	task := launcherTask(e, id, tasks[0])
	c := client.New(e.URL(), e.Tokens["u1"])
	_, err := c.CancelJob(context.Background(), id)
	require.NoError(t, err)
	for _, tk := range tasks {
		require.NoError(t, e.Store.Heartbeat(tk.ID, e.Store.Tokens()[tk.ID], structs.TaskEvent{Task: tk.ID, State: structs.TaskFailed, ExitCode: 143, Time: apitest.T0}))
	}
	var calls atomic.Int64
	jt := mpi.JobType{Ticks: make(chan time.Time), Now: func() time.Time {
		return apitest.T0.Add(time.Duration(calls.Add(1)) * time.Hour) // the deadline passes after one poll
	}}
	_, err = jt.Prepare(context.Background(), "v1", task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MPI workers not ready after 10m0s: the coordinator did not answer:")
	assert.Contains(t, err.Error(), "has ended")
}
