package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// TestMPIRankFails runs real MPI jobs of 3 replicas × 2
// ranks on the local backend whose one chosen rank fails: the job's
// reason, the launcher's message and job why name the rank, how it
// ended, and the replica, task and node it ran on, while the launcher's
// log keeps mpirun's own report.
func TestMPIRankFails(t *testing.T) {
	mpicc, err := exec.LookPath("mpicc")
	require.NoError(t, err, "mpicc is missing: make test installs it (apt-get install openmpi-bin libopenmpi-dev)")
	bin := filepath.Join(t.TempDir(), "rankfail")
	out, err := exec.Command(mpicc, "-o", bin, "../../atom/testdata/rankfail.c").CombinedOutput()
	require.NoError(t, err, "mpicc: %s", out)
	servers := startClusterWith(t, twoNodes, 2)
	c := client.New(servers[1].url, token)
	ctx := context.Background()

	cases := []struct {
		name, args, mpirunArgs string
		code                   int
		replica                int // -1: unknown
		want                   string
		inLog                  string
	}{
		{"exit", `"3", exit, "7"`, "", 7, 1, "MPI rank 3 exited with code 7", "  Exit code:    7\n"},
		{"signal", `"4", signal, "9"`, "", 137, 2, "MPI rank 4 was killed by signal 9 (Killed)", "exited on signal 9 (Killed).\n"},
		{"mapped", `"3", exit, "7"`, "mpirunArgs: [--map-by, node], ", 7, -1,
			"MPI rank 3 exited with code 7 (its replica is unknown: the job's mpirunArgs choose how ranks are mapped)", "  Exit code:    7\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fmt.Sprintf("kind: mpi\nname: rf-%s\nreplicas: 3\ncommand: [%s, %s]\nmpi: {%sslotsPerReplica: 2}\nresources: {cpu: 1, memory: 1Gi}\n",
				tc.name, bin, tc.args, tc.mpirunArgs)
			sub, err := c.SubmitJob(ctx, []byte(spec), "rf-"+tc.name)
			require.NoError(t, err)
			var st *wire.JobStatus
			require.Eventually(t, func() bool {
				st, err = c.Job(ctx, sub.JobID)
				return err == nil && st.Job.State.Ended()
			}, 90*time.Second, 100*time.Millisecond)
			byReplica := map[int]*structs.Task{}
			for _, tk := range st.Tasks {
				if tk.Attempt == st.Job.Attempt {
					byReplica[tk.Index] = tk
				}
			}
			require.Len(t, byReplica, 3)
			launcher := byReplica[0]
			var log bytes.Buffer
			require.NoError(t, c.Logs(ctx, sub.JobID, launcher.ID, false, &log))

			want := tc.want
			if tc.replica >= 0 {
				r := byReplica[tc.replica]
				want += fmt.Sprintf(" on replica %d (task %s, node %s)", tc.replica, r.ID, r.Node)
			}
			require.Equal(t, structs.JobFailed, st.Job.State, "launcher log:\n%s", log.String())
			assert.Equal(t, fmt.Sprintf("replica 0 failed with exit code %d: %s", tc.code, want), st.Job.Reason, "launcher log:\n%s", log.String())
			assert.Equal(t, tc.code, launcher.ExitCode)
			assert.Equal(t, want, launcher.Message)
			why, err := c.Why(ctx, sub.JobID)
			require.NoError(t, err)
			assert.Equal(t, "not pending: the job is Failed ("+st.Job.Reason+")", why.Message)
			assert.Contains(t, log.String(), tc.inLog, "mpirun's own report reaches the log unchanged")
		})
	}
}
