package realnode_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// TestDatasetCache: a job with `cache:` on the real node reads a dataset
// that the test loaded into the cluster's Redis with plain open() under
// /mnt/cache (atom, PID 1, mounts it over FUSE with the Pod's /dev/fuse
// and CAP_SYS_ADMIN, not privileged), and the bytes are the test's: the
// job checks the SHA-256 sums the test computed and exits 0 only if they
// match. What it writes there is in Redis once it has closed the file.
func TestDatasetCache(t *testing.T) {
	e, redis, c := nodetest.StartWithRedis(t, nodetest.Options{})
	e.KubeletLogOnFailure(t)
	ctx := context.Background()

	// A dataset: files over several 1 MiB chunks, one shorter than a
	// chunk, an empty one, a subdirectory.
	local := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	files := map[string]int{"frames/frame_000.bin": 3<<20 + 12345, "frames/frame_001.bin": 1<<20 + 1, "meta.json": 517, "empty": 0}
	var sums strings.Builder
	for _, name := range []string{"empty", "frames/frame_000.bin", "frames/frame_001.bin", "meta.json"} {
		b := make([]byte, files[name])
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		p := filepath.Join(local, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		sum := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	info, err := c.Put(ctx, local, "lidar/2024-05", nil)
	require.NoError(t, err)
	require.Equal(t, int64(4), info.Files)

	// Without a FUSE device plugin the Pod gets the node's /dev/fuse by
	// hostPath, and the runtime's device cgroup refuses to open it: atom
	// fails the task with exit 5 saying what the node needs.
	t.Run("no-device-plugin", func(t *testing.T) {
		id := e.Submit(t, "kind: command\nname: no-plugin\ncache: {datasets: [lidar/2024-05]}\ncommand: [sh, -c, 'echo should not run']\nresources: {cpu: 250m, memory: 128Mi}\n")
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		require.Len(t, tasks, 1)
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Equal(t, structs.TaskFailed, tasks[0].State)
		assert.Equal(t, 5, tasks[0].ExitCode)
		assert.Contains(t, tasks[0].Message, "cannot open /dev/fuse (operation not permitted): the container has the device file but may not use it: "+
			"on Kubernetes, run a FUSE device plugin that advertises atom.io/fuse on the node")
		out := e.CLI(t, "job", "logs", string(id))
		assert.NotContains(t, out, "should not run")
		p, err := e.Pod(t, tasks[0].ID)
		require.NoError(t, err)
		assert.Equal(t, "/dev/fuse", hostPathOf(p, "fuse"))
		_, asked := p.Spec.Containers[0].Resources.Limits[kube.FuseResource]
		assert.False(t, asked)
	})

	e.StartFuseDevicePlugin(t)

	t.Run("read", func(t *testing.T) {
		id := e.Submit(t, `kind: command
name: read-cache
cache: {datasets: [lidar/2024-05]}
env:
  SUMS: |
`+indent(sums.String(), "    ")+`resources: {cpu: 250m, memory: 128Mi}
command:
  - sh
  - -c
  - |
    set -e
    grep " /mnt/cache " /proc/mounts
    echo "redis=$REDIS_HOST:$REDIS_PORT cache=$ATOM_CACHE_DIR"
    cd /mnt/cache/lidar/2024-05
    printf %s "$SUMS" | sha256sum -c
    sha256sum empty frames/frame_000.bin frames/frame_001.bin meta.json
    echo "written in the pod" > /mnt/cache/lidar/out.txt
`)
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		out := e.CLI(t, "job", "logs", string(id))
		t.Logf("job log:\n%s", out)
		require.Equal(t, structs.JobSucceeded, j.State, "%s: %s", j.Reason, out)
		assert.Equal(t, 0, tasks[0].ExitCode)
		assert.Contains(t, out, "redis="+redis.Addr+" cache=/mnt/cache\n")
		assert.Regexp(t, `(?m)^\S+ /mnt/cache fuse\S* `, out, "a FUSE mount at /mnt/cache")
		for _, name := range []string{"empty", "frames/frame_000.bin", "frames/frame_001.bin", "meta.json"} {
			assert.Contains(t, out, name+": OK\n")
		}
		assert.Contains(t, out, sums.String(), "the job's sha256sum of each file is the test's")
		assert.NotContains(t, out, "not complete", "the dataset was loaded whole")

		got, err := c.ReadFile(ctx, "/lidar/out.txt")
		require.NoError(t, err)
		assert.Equal(t, "written in the pod\n", string(got))

		// The Pod had one unit of the device plugin's resource (no
		// hostPath) and CAP_SYS_ADMIN, and was not privileged.
		p, err := e.Pod(t, tasks[0].ID)
		require.NoError(t, err)
		ctr := p.Spec.Containers[0]
		require.Equal(t, kube.ContainerName, ctr.Name)
		assert.Equal(t, int64(1), ctr.Resources.Limits.Name(kube.FuseResource, resource.DecimalSI).Value())
		assert.Equal(t, "", hostPathOf(p, "fuse"))
		require.NotNil(t, ctr.SecurityContext)
		assert.Nil(t, ctr.SecurityContext.Privileged)
		assert.Contains(t, fmt.Sprint(ctr.SecurityContext.Capabilities.Add), "SYS_ADMIN")
	})

	t.Run("not-cached", func(t *testing.T) {
		// A dataset no cache holds: the only cluster's cache lacks it, the
		// warm-up finds it nowhere, and the job fails before any Pod.
		id := e.Submit(t, "kind: command\nname: missing\ncache: {datasets: [video/none]}\ncommand: [cat, /mnt/cache/video/none/x]\nresources: {cpu: 250m, memory: 128Mi}\n")
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Contains(t, j.Reason, "WarmUpFailed")
		assert.Contains(t, j.Reason, "dataset video/none does not exist: no cluster's cache holds it")
		for _, x := range tasks {
			_, err := e.Pod(t, x.ID)
			assert.Error(t, err, "no Pod for a task that never started")
		}
	})
}

// hostPathOf is the host path of Pod p's volume name ("" if none).
func hostPathOf(p *corev1.Pod, name string) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == name && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
