// Package integration runs the real binaries: three `coordinator server`
// processes on loopback and tasks under `atom run`.
package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/testbin"
)

var binDir string

// TestMain builds coordinator and atom side by side, as a user would.
func TestMain(m *testing.M) {
	testbin.Main(m, &binDir, nil)
}

const token = "it-admin-token-0123456789"

type srv struct {
	id, url string
	cmd     *exec.Cmd
	log     string
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// oneNode is a cluster of one 16-core node, all of it dev's quota.
const oneNode = "clusters: [{name: local, backend: local}]\nnodes:\n  - {name: cpu-1, cpu: \"16\", memory: 64Gi}\nquotas:\n  - {scope: \"user:dev\", limits: {cpu: \"16\", memory: 64Gi}}\n"

// startCluster runs three servers; s1 bootstraps with the one-node cluster.
func startCluster(t *testing.T) []*srv { return startClusterWith(t, oneNode, 1) }

// startClusterWith runs three servers; s1 bootstraps with cluster, which
// declares nodes nodes.
func startClusterWith(t *testing.T, cluster string, nodes int) []*srv {
	t.Helper()
	return startClusterIn(t, t.TempDir(), cluster, nodes)
}

// startClusterIn is startClusterWith with the servers' files (data
// directories, logs) in dir.
func startClusterIn(t *testing.T, dir, cluster string, nodes int) []*srv {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte("users:\n  - {name: dev, token: "+token+", admin: true}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(cluster), 0o600))
	var servers []*srv
	var peers []string
	for i := 1; i <= 3; i++ {
		s := &srv{id: fmt.Sprintf("s%d", i), url: "http://" + freePort(t)}
		servers = append(servers, s)
		peers = append(peers, "--peer", s.id+"="+s.url)
	}
	for i, s := range servers {
		args := []string{"server", "--id", s.id, "--raft-addr", freePort(t), "--http-addr", strings.TrimPrefix(s.url, "http://"),
			"--data-dir", filepath.Join(dir, s.id), "--tokens", filepath.Join(dir, "tokens.yaml"), "--secret", "it-secret",
			"--heartbeat-ttl", "3s", "--cycle", "100ms"}
		args = append(args, peers...)
		if i == 0 {
			args = append(args, "--bootstrap", "--cluster-config", filepath.Join(dir, "cluster.yaml"))
		} else {
			args = append(args, "--join", servers[0].url)
		}
		s.log = filepath.Join(dir, s.id+".log")
		f, err := os.Create(s.log)
		require.NoError(t, err)
		s.cmd = exec.Command(filepath.Join(binDir, "coordinator"), args...)
		s.cmd.Stdout, s.cmd.Stderr = f, f
		require.NoError(t, s.cmd.Start())
		t.Cleanup(func() { _ = s.cmd.Process.Kill(); _, _ = s.cmd.Process.Wait(); f.Close() })
	}
	for _, s := range servers {
		c := client.New(s.url, token)
		require.Eventually(t, func() bool {
			got, err := c.Nodes(context.Background())
			return err == nil && len(got) == nodes
		}, 30*time.Second, 50*time.Millisecond, "server %s has the cluster", s.id)
	}
	return servers
}

// leader returns the server that most recently logged gaining leadership.
func leader(t *testing.T, servers []*srv) *srv {
	t.Helper()
	var best *srv
	var bestAt string
	for _, s := range servers {
		f, err := os.Open(s.log)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "gained leadership") {
				if at := strings.Fields(line)[0]; at > bestAt {
					best, bestAt = s, at
				}
			}
		}
		f.Close()
	}
	require.NotNil(t, best)
	return best
}

func processes(t *testing.T, marker string) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-fc", "^"+marker).Output() // the command itself, not atom running it
	var n int
	fmt.Sscan(strings.TrimSpace(string(out)), &n)
	return n
}

// TestTasksSurviveLeaderKill: kill -9 the leader of three servers while a
// command and a service run under atom: the command still ends Succeeded,
// the service keeps its tasks (nothing runs twice), and cancelling it
// through the new leader stops its processes.
func TestTasksSurviveLeaderKill(t *testing.T) {
	servers := startCluster(t)
	ctx := context.Background()
	lead := leader(t, servers)
	var other *srv
	for _, s := range servers {
		if s != lead {
			other = s
			break
		}
	}
	c := client.New(other.url, token)
	marker := fmt.Sprintf("sleep %d", 2000+time.Now().Nanosecond()%1000)
	t.Cleanup(func() { // a failed run must not leave the orphans behind
		_ = exec.Command("pkill", "-f", "atom run -- sh -c exec "+marker).Run()
		_ = exec.Command("pkill", "-f", "^"+marker).Run()
	})
	cmdJob, err := c.SubmitJob(ctx, []byte("kind: command\nname: long\ncommand: [sh, -c, 'sleep 5']\nresources: {cpu: 1, memory: 1Gi}\n"), "it-1")
	require.NoError(t, err)
	svc, err := c.SubmitJob(ctx, []byte("kind: service\nname: svc\nreplicas: 2\ncommand: [sh, -c, 'exec "+marker+"']\nresources: {cpu: 1, memory: 1Gi}\n"), "it-2")
	require.NoError(t, err)
	var before []structs.TaskID
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, svc.JobID)
		if err != nil || st.Job.State != structs.JobRunning {
			return false
		}
		before = nil
		for _, tk := range st.Tasks {
			before = append(before, tk.ID)
		}
		return len(before) == 2 && processes(t, marker) == 2
	}, 30*time.Second, 50*time.Millisecond)

	require.NoError(t, lead.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = lead.cmd.Process.Wait()

	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, cmdJob.JobID)
		return err == nil && st.Job.State == structs.JobSucceeded
	}, 40*time.Second, 100*time.Millisecond, "the command outlives the leader that started it")
	// Two heartbeat TTLs after the kill the service still runs its first tasks.
	require.Eventually(t, func() bool {
		st, err := c.Job(ctx, svc.JobID)
		if err != nil {
			return false
		}
		var ids []structs.TaskID
		for _, tk := range st.Tasks {
			if tk.State == structs.TaskRunning {
				ids = append(ids, tk.ID)
			}
		}
		return assert.ObjectsAreEqual(before, ids)
	}, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, 2, processes(t, marker), "nothing runs twice")

	_, err = c.CancelJob(ctx, svc.JobID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return processes(t, marker) == 0 }, 40*time.Second, 100*time.Millisecond,
		"cancelling through the new leader stops the orphaned processes")
}
