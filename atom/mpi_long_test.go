package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// mpiCoordinator is a dev coordinator whose tasks run under atom with
// ATOM_RSH_HEADER_TIMEOUT set to headerTimeout, which mpirun's atom rsh
// inherits: atom is run through a script that sets it.
func mpiCoordinator(t *testing.T, headerTimeout string) *client.Client {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "atom")
	script := fmt.Sprintf("#!/bin/sh\nATOM_RSH_HEADER_TIMEOUT=%s exec %s \"$@\"\n", headerTimeout, atomBin)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	_, c := devCoordinator(t, func(cfg *daemon.Config) { cfg.Atom = wrapper })
	return c
}

// runMPI runs the 2-replica MPI job of one A100 per replica, on two
// nodes, that runs command, to its end.
func runMPI(t *testing.T, c *client.Client, name, command string) *wire.JobStatus {
	t.Helper()
	spec := fmt.Sprintf("kind: mpi\nname: %s\nreplicas: 2\naffinity: {spreadReplicas: true}\n"+
		"resources: {cpu: 1, memory: 1Gi, accelerators: {type: A100, count: 1}}\ncommand: [sh, -c, %q]\n", name, command)
	ctx := context.Background()
	var id structs.JobID
	require.Eventually(t, func() bool { // once the dev cluster's config has landed
		r, err := c.SubmitJob(ctx, []byte(spec), "req-"+name)
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, waitLong, 20*time.Millisecond)
	var st *wire.JobStatus
	require.Eventually(t, func() bool {
		var err error
		st, err = c.Job(ctx, id)
		return err == nil && st.Job.State.Ended()
	}, waitLong, 50*time.Millisecond)
	return st
}

// replicas are the tasks of st's attempt by replica, and the launcher's log.
func replicas(t *testing.T, c *client.Client, st *wire.JobStatus) (map[int]*structs.Task, string) {
	t.Helper()
	byReplica := map[int]*structs.Task{}
	for _, tk := range st.Tasks {
		if tk.Attempt == st.Job.Attempt {
			byReplica[tk.Index] = tk
		}
	}
	require.Len(t, byReplica, 2)
	var log bytes.Buffer
	require.NoError(t, c.Logs(context.Background(), st.Job.ID, byReplica[0].ID, false, &log))
	return byReplica, log.String()
}

// An MPI job outlasts atom rsh's wait for the launch server's answer:
// orted writes nothing while the ranks run, and the worker's atom answers
// as soon as it has started it, not when it ends.
func TestMPIJobOutlastsRshHeaderTimeout(t *testing.T) {
	t.Parallel()
	c := mpiCoordinator(t, "1s")
	st := runMPI(t, c, "long", "sleep 3")
	_, log := replicas(t, c, st)
	assert.Equal(t, structs.JobSucceeded, st.Job.State, "reason %q; launcher log:\n%s", st.Job.Reason, log)
	assert.NotContains(t, log, "atom rsh:")
}

// When atom rsh fails, the job's reason says so, naming the replica it
// launched on; the worker, stopped because its launcher went away, is
// neither blamed nor taken for cancelled.
func TestMPIRshFailureNamed(t *testing.T) {
	t.Parallel()
	c := mpiCoordinator(t, "1ns") // no launch server answers that fast
	st := runMPI(t, c, "rshfails", "sleep 30")
	byReplica, log := replicas(t, c, st)
	w := byReplica[1]
	require.Equal(t, structs.JobFailed, st.Job.State, "launcher log:\n%s", log)
	want := fmt.Sprintf("atom rsh could not start Open MPI's daemon on replica 1 (task %s, node %s): launch on ", w.ID, w.Node)
	assert.True(t, strings.HasPrefix(st.Job.Reason, "replica 0 failed with exit code "), st.Job.Reason)
	assert.Contains(t, st.Job.Reason, want, "launcher log:\n%s", log)
	assert.Contains(t, st.Job.Reason, "timeout awaiting response headers")
	assert.Contains(t, byReplica[0].Message, want)
	if w.State == structs.TaskFailed && w.StopReason == "" { // its orted had started: stopped when atom rsh went
		assert.True(t, strings.HasPrefix(w.Message, "LauncherGone: the launcher's connection closed"), w.Message)
	} else { // the launch never started: stopped as the job ended
		assert.Equal(t, structs.StopJobEnded, w.StopReason, "worker %s %s: %s", w.State, w.StopReason, w.Message)
	}
	assert.NotEqual(t, structs.StopCancelled, byReplica[0].StopReason)
}
