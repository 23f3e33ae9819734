package realnode_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// mpiImage is the openmpi image with the MPI test programs of
// atom/testdata in /usr/local/bin, as a user's image FROM atom's openmpi
// adds a program, imported into e's node; it returns its ref.
//
// The programs are compiled here with the host's mpicc rather than in a
// build stage of the image: the openmpi image is Debian bookworm's
// openmpi-bin, the host (make test's) is bookworm with libopenmpi-dev of
// the same version, so the binaries link against the very library the
// image has. The build checks it (the host's libopenmpi3 version is the
// image's) and fails otherwise, and the host's version is part of the
// cached image's key: the image is built again only when the programs,
// the openmpi image or the host's Open MPI change (a few seconds; else it
// is taken from the images cache).
func mpiImage(t *testing.T, e *nodetest.Env) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc")
	require.NoError(t, err, "mpicc is missing: make test installs it (apt-get install openmpi-bin libopenmpi-dev)")
	host, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "libopenmpi3").Output()
	require.NoError(t, err, "the host's libopenmpi3 (libopenmpi-dev's library): apt-get install libopenmpi-dev")
	dir := t.TempDir()
	files := map[string]string{}
	for _, prog := range []string{"allreduce", "rankfail"} {
		bin := filepath.Join(dir, prog)
		out, err := exec.Command(mpicc, "-O2", "-o", bin, nodetest.RepoFile("atom/testdata/"+prog+".c")).CombinedOutput()
		require.NoError(t, err, "mpicc: %s", out)
		files["/usr/local/bin/"+prog] = bin
	}
	return e.ImportDerived(t, nodetest.Derived{
		Name: "openmpi-tests", Base: "openmpi", Files: files,
		Key: []string{"libopenmpi3=" + string(host)},
		Check: func(run func(args ...string) (string, error)) error {
			img, err := run("dpkg-query", "-W", "-f", "${Version}", "libopenmpi3")
			if err != nil {
				return err
			}
			if img != string(host) {
				return fmt.Errorf("the programs are compiled against the host's Open MPI (libopenmpi3 %s), the image has %s: make them match (the host's make deps, or the openmpi image's base)", host, img)
			}
			return nil
		},
	})
}

// TestMPIJob: MPI jobs of two replicas in two Pods on the real node, atom
// PID 1 in each: the launcher waits for its worker, mpirun starts the
// worker's orted through `atom rsh` at the worker's Pod IP (port 7077),
// and the ranks' MPI traffic crosses the Pod network too. The allreduce's
// result is in `job logs`; a rank that fails fails the job with the rank,
// how it ended and its replica named, as on the local backend.
func TestMPIJob(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{Images: []string{"openmpi"}})
	e.KubeletLogOnFailure(t)
	image := mpiImage(t, e)

	// run runs an MPI job of 2 replicas and returns it ended, its tasks
	// by replica and its `job logs`.
	run := func(t *testing.T, name, rest string) (*structs.Job, map[int]*structs.Task, string) {
		t.Helper()
		start := time.Now()
		id := e.Submit(t, "kind: mpi\nname: "+name+"\nimage: "+image+"\nreplicas: 2\nresources: {cpu: 500m, memory: 256Mi}\n"+rest)
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		out := e.CLI(t, "job", "logs", string(id))
		t.Logf("job %s %s (%s), submitted to ended in %s; job logs:\n%s", id, j.State, j.Reason, time.Since(start).Round(time.Millisecond), out)
		require.Len(t, tasks, 2)
		byReplica := map[int]*structs.Task{}
		for _, x := range tasks {
			byReplica[x.Index] = x
		}
		require.Len(t, byReplica, 2)
		return j, byReplica, out
	}

	t.Run("allreduce", func(t *testing.T) {
		j, tasks, out := run(t, "allreduce", "command: [/usr/local/bin/allreduce]\n")
		require.Equal(t, structs.JobSucceeded, j.State, j.Reason)
		assert.Equal(t, fmt.Sprintf("==> %s (replica 0, node %s) <==\nsum=3 size=2\n==> %s (replica 1, node %s) <==\n",
			tasks[0].ID, tasks[0].Node, tasks[1].ID, tasks[1].Node), out, "rank 0 prints the allreduce of both ranks")
		for i, x := range tasks {
			assert.Equal(t, structs.TaskSucceeded, x.State, "replica %d: %s", i, x.Message)
			assert.Equal(t, 0, x.ExitCode, "replica %d", i)
		}
		// The launcher reached the worker at the worker Pod's IP.
		p, err := e.Pod(t, tasks[1].ID)
		require.NoError(t, err)
		require.NotEmpty(t, p.Status.PodIP)
		assert.Equal(t, p.Status.PodIP+":7077", tasks[1].Endpoint)
	})

	// Two ranks per replica: ranks 0, 1 in the launcher's Pod, 2, 3 in
	// the worker's (--map-by slot), each in its own container.
	t.Run("placement", func(t *testing.T) {
		j, tasks, out := run(t, "placement", `command: [sh, -c, 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE in $(cat /proc/sys/kernel/hostname)" >&2; exec /usr/local/bin/allreduce']
mpi: {slotsPerReplica: 2}
`)
		require.Equal(t, structs.JobSucceeded, j.State, j.Reason)
		assert.Contains(t, out, "sum=10 size=4\n")
		var ranks []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "rank ") {
				ranks = append(ranks, l)
			}
		}
		sort.Strings(ranks)
		pod := func(i int) string { return kube.PodName(tasks[i].ID) }
		assert.Equal(t, []string{"rank 0 of 4 in " + pod(0), "rank 1 of 4 in " + pod(0), "rank 2 of 4 in " + pod(1), "rank 3 of 4 in " + pod(1)}, ranks)
	})

	// The failure report names the rank, how it ended and its replica,
	// task and node, as on the local backend; mpirun's own report stays
	// in the launcher's log.
	for _, tc := range []struct {
		name, args, mpi string
		code            int
		how, inLog      string
	}{
		{"rank-exits", `"1", exit, "7"`, "", 7, "MPI rank 1 exited with code 7", "  Exit code:    7\n"},
		{"rank-killed", `"3", signal, "9"`, "mpi: {slotsPerReplica: 2}\n", 137, "MPI rank 3 was killed by signal 9 (Killed)", "exited on signal 9 (Killed).\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, tasks, out := run(t, tc.name, "command: [/usr/local/bin/rankfail, "+tc.args+"]\n"+tc.mpi)
			w := tasks[1]
			want := fmt.Sprintf("%s on replica 1 (task %s, node %s)", tc.how, w.ID, w.Node)
			require.Equal(t, structs.JobFailed, j.State, j.Reason)
			assert.Equal(t, fmt.Sprintf("replica 0 failed with exit code %d: %s", tc.code, want), j.Reason)
			assert.Equal(t, structs.TaskFailed, tasks[0].State)
			assert.Equal(t, tc.code, tasks[0].ExitCode)
			assert.Equal(t, want, tasks[0].Message)
			assert.Contains(t, out, tc.inLog, "mpirun's own report reaches the log unchanged")
			why := e.CLI(t, "job", "why", string(j.ID))
			assert.Contains(t, why, j.Reason)
		})
	}
}
