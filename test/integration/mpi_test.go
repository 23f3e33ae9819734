package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// twoNodes: two 8-core nodes, so gangs spread over both.
const twoNodes = "clusters: [{name: local, backend: local}]\nnodes:\n  - {name: cpu-1, cpu: \"8\", memory: 32Gi}\n  - {name: cpu-2, cpu: \"8\", memory: 32Gi}\nquotas:\n  - {scope: \"user:dev\", limits: {cpu: \"16\", memory: 64Gi}}\n"

// allreduce builds the MPI test program with mpicc.
func allreduce(t *testing.T) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc")
	require.NoError(t, err, "mpicc is missing: make test installs it (apt-get install openmpi-bin libopenmpi-dev)")
	bin := filepath.Join(t.TempDir(), "allreduce")
	out, err := exec.Command(mpicc, "-O2", "-o", bin, "../../atom/testdata/allreduce.c").CombinedOutput()
	require.NoError(t, err, "mpicc: %s", out)
	return bin
}

// TestMPIJobs runs real MPI jobs on the local backend: replica 0 waits for
// its workers, runs mpirun with atom rsh as the launch agent, and rank 0's
// allreduce output reaches the job's log. Gangs of 2 and 4 replicas.
func TestMPIJobs(t *testing.T) {
	bin := allreduce(t)
	servers := startClusterWith(t, twoNodes, 2)
	c := client.New(servers[1].url, token)
	ctx := context.Background()
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("replicas=%d", n), func(t *testing.T) {
			spec := fmt.Sprintf("kind: mpi\nname: allreduce-%d\nreplicas: %d\ncommand: [%s]\nresources: {cpu: 1, memory: 1Gi}\n", n, n, bin)
			sub, err := c.SubmitJob(ctx, []byte(spec), fmt.Sprintf("mpi-%d", n))
			require.NoError(t, err)
			var st *wire.JobStatus
			require.Eventually(t, func() bool {
				st, err = c.Job(ctx, sub.JobID)
				return err == nil && st.Job.State.Ended()
			}, 90*time.Second, 100*time.Millisecond)
			var launcher structs.TaskID
			for _, tk := range st.Tasks {
				if tk.Index == 0 && tk.Attempt == st.Job.Attempt {
					launcher = tk.ID
				}
			}
			var log bytes.Buffer
			require.NoError(t, c.Logs(ctx, sub.JobID, launcher, false, &log))
			require.Equal(t, structs.JobSucceeded, st.Job.State, "reason %q; launcher log:\n%s", st.Job.Reason, log.String())
			assert.Equal(t, fmt.Sprintf("sum=%d size=%d", n*(n+1)/2, n), programOutput(log.String()))
		})
	}
}

// programOutput drops atom's own lines from a task's log (its warnings
// when a busy leader election delays a heartbeat, "atom: ..." notes) and
// mpirun's warning when the launch agent it forked has already exec'd
// before mpirun's own setpgid (Open MPI's plm:rsh; harmless, the child
// set its group itself): what is left is exactly what the program wrote.
func programOutput(log string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		benign := strings.Contains(l, "plm:rsh: Warning: setpgid(")
		if !benign && !strings.HasPrefix(l, "time=") && !strings.HasPrefix(l, "atom: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
