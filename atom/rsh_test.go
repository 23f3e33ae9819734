package main_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// atom rsh finds HOST through the coordinator's peers endpoint, runs the
// command there and exits with its status; 255 when there is none.
func TestRshCommand(t *testing.T) {
	t.Parallel()
	_, servers, hostsFile := rshServers(t, 1)
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/tasks/mpi-7-0-x/peers" || r.Header.Get("Authorization") != "Bearer "+rshToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "the token is not an allocation token of task mpi-7-0-x or its job"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(wire.PeerList{Job: "mpi-7", Attempt: 1, Peers: []wire.Peer{
			{Task: "mpi-7-0-x", Index: 0, State: structs.TaskRunning},
			{Task: "mpi-7-1-y", Index: 1, State: structs.TaskRunning, Endpoint: servers[0].Addr()},
			{Task: "mpi-7-2-z", Index: 2, State: structs.TaskScheduled},
		}})
	}))
	t.Cleanup(coord.Close)
	env := []string{"ATOM_COORDINATOR=" + coord.URL, "ATOM_TASK_ID=mpi-7-0-x", "ATOM_TOKEN=" + rshToken}
	rsh := func(env []string, args ...string) (int, string) {
		t.Helper()
		return exitCode(t, atomCmd(t, env, append([]string{"rsh"}, args...)...))
	}

	cmd := atomCmd(t, env, "rsh", "-x", "-l", "root", "mpi-7-1-y", "echo", "'a  b'", ";", "echo err >&2;", "exit 5")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.Error(t, cmd.Run())
	assert.Equal(t, 5, cmd.ProcessState.ExitCode(), stderr.String())
	assert.Equal(t, "a  b\n", stdout.String())
	assert.Equal(t, "err\n", stderr.String())
	code, out := rsh(env, "mpi-7-2-z", "true")
	assert.Equal(t, 255, code)
	assert.Equal(t, "atom rsh: host mpi-7-2-z (replica 2, Scheduled) has not reported a launch endpoint yet\n", out)
	code, out = rsh(env, "mpi-7-9-q", "true")
	assert.Equal(t, 255, code)
	assert.Contains(t, out, "host mpi-7-9-q is not a live task of job mpi-7's attempt 2")
	code, out = rsh([]string{"ATOM_COORDINATOR=" + coord.URL, "ATOM_TASK_ID=mpi-7-0-x", "ATOM_TOKEN=old"}, "mpi-7-1-y", "true")
	assert.Equal(t, 255, code)
	assert.Contains(t, out, "the token is not an allocation token")

	// ATOM_RSH_HOSTS comes first: no coordinator needed.
	code, out = rsh([]string{"ATOM_RSH_HOSTS=" + hostsFile, "ATOM_TOKEN=" + rshToken}, "mpi-7-0-a1f0", "exit 3")
	assert.Equal(t, 3, code, out)
	code, out = rsh([]string{"ATOM_RSH_HOSTS=" + hostsFile, "ATOM_TOKEN=wrong"}, "mpi-7-0-a1f0", "true")
	assert.Equal(t, 255, code)
	assert.Contains(t, out, "401 launch refused: not an allocation token of this job")

	// Nothing listens: 255, as ssh.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	code, out = rsh([]string{"ATOM_TOKEN=" + rshToken}, addr, "true")
	assert.Equal(t, 255, code)
	assert.Contains(t, out, "atom rsh: launch on "+addr)
	code, out = rsh(env, "mpi-7-1-y")
	assert.Equal(t, 255, code)
	assert.Contains(t, out, "opens no shell")
}
