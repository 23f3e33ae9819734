package mpi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rankfail builds atom/testdata/rankfail.c with mpicc.
func rankfail(t *testing.T) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc")
	require.NoError(t, err, "mpicc is missing: make test installs it (apt-get install openmpi-bin libopenmpi-dev)")
	bin := filepath.Join(t.TempDir(), "rankfail")
	out, err := exec.Command(mpicc, "-o", bin, "../../atom/testdata/rankfail.c").CombinedOutput()
	require.NoError(t, err, "mpicc: %s", out)
	return bin
}

// A real mpirun's report of a failed rank (4 ranks on this machine) is
// read from its stderr, handed over a byte at a time.
func TestWatcherReadsRealMPIRun(t *testing.T) {
	bin := rankfail(t)
	host, err := os.Hostname()
	require.NoError(t, err)
	host, _, _ = strings.Cut(host, ".")
	cases := []struct {
		args []string
		code int
		want Failure
	}{
		{[]string{"3", "exit", "7"}, 7, Failure{Rank: 3, How: "exited with code 7"}},
		{[]string{"2", "signal", "9"}, 137, Failure{Rank: 2, Host: host, How: "was killed by signal 9 (Killed)"}},
		// MPI_Abort is left out: Open MPI 4.1.4 loses its report about
		// half the time ("ORTE_ERROR_LOG: Data unpack would read past end
		// of buffer in file ../../../orte/util/show_help.c"); its text is
		// read in TestWatcherReports.
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := []string{"--oversubscribe", "-np", "4", "--bind-to", "none", "--mca", "btl", "self,tcp",
				"--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}
			if os.Geteuid() == 0 {
				args = append(args, "--allow-run-as-root")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "mpirun", append(append(args, bin), c.args...)...)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // Open MPI's session directory
			var w Watcher
			var stderr strings.Builder
			cmd.Stderr = &oneByteAtATime{w: &w, copy: &stderr}
			err := cmd.Run()
			require.Error(t, err)
			assert.Equal(t, c.code, cmd.ProcessState.ExitCode(), "stderr: %s", stderr.String())
			got, ok := w.Failure()
			require.True(t, ok, "no failure read from:\n%s", stderr.String())
			assert.Equal(t, c.want, got)
		})
	}
}

// oneByteAtATime splits every write into bytes, as pipe reads may.
type oneByteAtATime struct {
	w    *Watcher
	copy *strings.Builder
}

func (o *oneByteAtATime) Write(p []byte) (int, error) {
	o.copy.Write(p)
	for i := range p {
		_, _ = o.w.Write(p[i : i+1])
	}
	return len(p), nil
}

// The reports mpirun 4.1 prints (help-orterun.txt), the first one wins,
// and memory stays bounded whatever a rank writes.
func TestWatcherReports(t *testing.T) {
	cases := map[string]Failure{
		"--------\nmpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[21583,1],3]\n  Exit code:    7\n-----\n": {Rank: 3, How: "exited with code 7"},
		"mpirun noticed that process rank 4 with PID 16685 on node mpi-7-1-a1f1 exited on signal 9 (Killed).\n":                                                                                                                  {Rank: 4, Host: "mpi-7-1-a1f1", How: "was killed by signal 9 (Killed)"},
		"mpirun noticed that process rank 0 with PID 0 on node vm exited on signal 11.\n":                                                                                                                                        {Rank: 0, Host: "vm", How: "was killed by signal 11"},
		"MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD\nwith errorcode 5.\n\nNOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n":                                                             {Rank: 2, How: "called MPI_Abort with error code 5"},
		"mpirun has exited due to process rank 1 with PID 0 on\nnode vm exiting improperly. There are three reasons this could occur:\n":                                                                                         {Rank: 1, Host: "vm", How: "exited without calling MPI_Finalize"},
		"mpirun has exited due to process rank 5 with PID 0 on\nnode j-2-cc calling \"abort\". This may have caused other processes\n":                                                                                           {Rank: 5, Host: "j-2-cc", How: `called "abort"`},
		"atom rsh: host replica-1: launch on 127.0.0.1:40123: the connection closed before the command's exit status came\n": {Rank: -1, Host: "replica-1", Launch: true,
			How: "launch on 127.0.0.1:40123: the connection closed before the command's exit status came"},
		"atom rsh: ATOM_TOKEN is not set: atom rsh runs under atom run\n": {Rank: -1, Launch: true, How: "ATOM_TOKEN is not set: atom rsh runs under atom run"},
		// the first report wins over a later one
		"  Process name: [[1,1],2]\n  Exit code:    1\nmpirun noticed that process rank 0 with PID 0 on node vm exited on signal 15 (Terminated).\n": {Rank: 2, How: "exited with code 1"},
	}
	for in, want := range cases {
		var w Watcher
		_, _ = w.Write([]byte(in))
		got, ok := w.Failure()
		require.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{
		"Process name: [[1,2],3]\nExit code:    7\n",                 // a spawned job's rank: not the world's
		"Process name: [[1,1],3]\nsomething else\nExit code:    7\n", // not the report's second line
		"rank 3 says: mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n",
		"mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).", // no newline yet
	} {
		var w Watcher
		_, _ = w.Write([]byte(in))
		_, ok := w.Failure()
		assert.False(t, ok, in)
	}

	var w Watcher
	long := strings.Repeat("x", 1<<20) + "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n"
	for range 3 {
		_, _ = w.Write([]byte(long))
	}
	_, ok := w.Failure()
	assert.False(t, ok, "a report inside a long line is a rank's own output")
	assert.LessOrEqual(t, cap(w.line), 2*maxLine)
	_, _ = fmt.Fprint(&w, "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n")
	got, ok := w.Failure()
	require.True(t, ok)
	assert.Equal(t, Failure{Rank: 1, Host: "vm", How: "was killed by signal 9 (Killed)"}, got)
}

func TestExplainNamesTheReplica(t *testing.T) {
	l := Layout{Mapped: true, Slots: 2, Replicas: []Replica{
		{Index: 0, Task: "j-0-aa", Node: "cpu-1", Host: "localhost"},
		{Index: 1, Task: "j-1-bb", Node: "cpu-2", Host: "j-1-bb"},
		{Index: 2, Task: "j-2-cc", Node: "cpu-1", Host: "j-2-cc"},
	}}
	exit3 := Failure{Rank: 3, How: "exited with code 7"}
	assert.Equal(t, "MPI rank 3 exited with code 7 on replica 1 (task j-1-bb, node cpu-2)", l.Explain(exit3, "vm"))
	kill4 := Failure{Rank: 4, Host: "j-2-cc", How: "was killed by signal 9 (Killed)"}
	assert.Equal(t, "MPI rank 4 was killed by signal 9 (Killed) on replica 2 (task j-2-cc, node cpu-1)", l.Explain(kill4, "vm"))
	local := Failure{Rank: 1, Host: "vm", How: "was killed by signal 11 (Segmentation fault)"}
	assert.Equal(t, "MPI rank 1 was killed by signal 11 (Segmentation fault) on replica 0 (task j-0-aa, node cpu-1)", l.Explain(local, "vm"))
	assert.Equal(t, "MPI rank 9 exited with code 7 (its replica is unknown)", l.Explain(Failure{Rank: 9, How: "exited with code 7"}, "vm"))

	// The job maps ranks itself: only a host mpirun names tells the replica.
	l.Mapped = false
	assert.Equal(t, "MPI rank 3 exited with code 7 (its replica is unknown: the job's mpirunArgs choose how ranks are mapped)", l.Explain(exit3, "vm"))
	assert.Equal(t, "MPI rank 4 was killed by signal 9 (Killed) on replica 2 (task j-2-cc, node cpu-1)", l.Explain(kill4, "vm"))
	assert.Equal(t, "MPI rank 4 was killed by signal 9 (Killed) on host other (its replica is unknown)", l.Explain(Failure{Rank: 4, Host: "other", How: kill4.How}, "vm"))

	// atom rsh failed: the replica it launched on, and why.
	rsh := Failure{Rank: -1, Host: "j-1-bb", How: "launch on 127.0.0.1:40123: connection refused", Launch: true}
	assert.Equal(t, "atom rsh could not start Open MPI's daemon on replica 1 (task j-1-bb, node cpu-2): launch on 127.0.0.1:40123: connection refused", l.Explain(rsh, "vm"))
	rsh.Host = "other"
	assert.Equal(t, "atom rsh could not start Open MPI's daemon on host other: launch on 127.0.0.1:40123: connection refused", l.Explain(rsh, "vm"))
	rsh.Host = ""
	assert.Equal(t, "atom rsh could not start Open MPI's daemon: launch on 127.0.0.1:40123: connection refused", l.Explain(rsh, "vm"))

	// No layout (it could not be read): the rank is still named.
	assert.Equal(t, "MPI rank 3 exited with code 7 (its replica is unknown)", Layout{}.Explain(exit3, "vm"))
	// A replica whose node is not known.
	one := Layout{Mapped: true, Slots: 4, Replicas: []Replica{{Index: 0, Task: "k-0-aa", Host: "localhost"}}}
	assert.Equal(t, "MPI rank 3 exited with code 7 on replica 0 (task k-0-aa)", one.Explain(exit3, "vm"))
}

func TestUserMaps(t *testing.T) {
	for _, args := range [][]string{
		{"--map-by", "node"}, {"-map-by", "ppr:1:node"}, {"--map-by=socket"}, {"--rank-by", "node"}, {"-npernode", "2"},
		{"-N", "1"}, {"--bynode"}, {"-rf", "ranks.txt"}, {"--rankfile", "r"}, {"--host", "a,b"}, {"-H", "a"},
		{"--mca", "rmaps_base_mapping_policy", "node"}, {"-x", "OMPI_MCA_rmaps_base_mapping_policy=node"}, {"--cpus-per-rank", "4"},
	} {
		assert.True(t, UserMaps(args), "%v", args)
	}
	for _, args := range [][]string{
		nil, {"-x", "NCCL_DEBUG"}, {"--mca", "btl", "self,tcp"}, {"--bind-to", "core"}, {"--report-bindings"}, {"-x", "N"},
	} {
		assert.False(t, UserMaps(args), "%v", args)
	}
}
