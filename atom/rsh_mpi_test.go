package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/rsh"
)

const rshToken = "token-of-replica-0"

func stubVerify(_ context.Context, tok string) error {
	if tok != rshToken {
		return errors.New("not an allocation token of this job")
	}
	return nil
}

// rshServers starts n launch servers, as n replicas' atoms would, and
// writes the ATOM_RSH_HOSTS file naming them by made-up task IDs.
func rshServers(t *testing.T, n int) (hosts []string, servers []*rsh.Server, hostsFile string) {
	t.Helper()
	m := map[string]string{}
	for i := range n {
		// Each made-up host its own TMPDIR, as each Pod (and each local
		// task) has: Open MPI 4.1's orteds on one host race creating their
		// session directory under it ("mkdir ... File exists").
		s := rsh.New(rsh.Config{Verify: stubVerify, Env: append(os.Environ(), "TMPDIR="+t.TempDir())})
		require.NoError(t, s.Listen("127.0.0.1:0"))
		t.Cleanup(func() { s.Stop(time.Second); _ = s.Close() })
		h := fmt.Sprintf("mpi-7-%d-a1f%d", i, i)
		hosts, servers, m[h] = append(hosts, h), append(servers, s), s.Addr()
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	hostsFile = filepath.Join(t.TempDir(), "rsh-hosts.json")
	require.NoError(t, os.WriteFile(hostsFile, b, 0o600))
	return hosts, servers, hostsFile
}

// A real mpirun starts its orted daemons through atom rsh on two made-up
// hosts, and the ranks find each other: MPI_Allreduce of rank+1.
func TestMPIRunOverAtomRsh(t *testing.T) {
	t.Parallel()
	mpirun, err := exec.LookPath("mpirun")
	require.NoError(t, err, "mpirun is missing: make test installs it (apt-get install openmpi-bin libopenmpi-dev)")
	dir := t.TempDir()
	prog := filepath.Join(dir, "allreduce")
	out, err := exec.Command("mpicc", "-o", prog, "testdata/allreduce.c").CombinedOutput()
	require.NoError(t, err, "mpicc: %s", out)

	for _, ranks := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d ranks", ranks), func(t *testing.T) {
			t.Parallel()
			hosts, servers, hostsFile := rshServers(t, 2)
			hostfile := filepath.Join(t.TempDir(), "hostfile")
			var hf strings.Builder
			for _, h := range hosts {
				fmt.Fprintf(&hf, "%s slots=%d\n", h, ranks/len(hosts))
			}
			require.NoError(t, os.WriteFile(hostfile, []byte(hf.String()), 0o600))

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--hostfile", hostfile, "-np", fmt.Sprint(ranks),
				"--mca", "plm_rsh_agent", atomBin+" rsh",
				"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
				prog)
			cmd.Env = append(os.Environ(), "ATOM_RSH_HOSTS="+hostsFile, "ATOM_TOKEN="+rshToken, "ATOM_COORDINATOR=", "TMPDIR="+t.TempDir())
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
			assert.Equal(t, fmt.Sprintf("sum=%d size=%d\n", ranks*(ranks+1)/2, ranks), stdout.String(), "stderr: %s", stderr.String())
			for i, s := range servers {
				<-s.Done()
				assert.Equal(t, 1, s.Launched(), "one orted on host %s", hosts[i])
				assert.Equal(t, 0, s.ExitCode(), "orted on host %s", hosts[i])
			}
		})
	}
}
