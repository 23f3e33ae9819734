package k8stest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// machineView is what the real node may change on the machine.
type machineView struct {
	Sysctls       map[string]string
	LoAddr        bool
	Bridge        bool
	Paths         []string // those of realNodeMachinePaths that exist, /run/containerd aside
	Chains        map[string][]string
	StateFile     bool
	NodeDirs      []string
	KubepodsCgrps int
	Mounts        []string
	Processes     []string
	ContainerLogs []string // links in /var/log/containers into a node's directory
}

func viewMachine(t *testing.T) machineView {
	t.Helper()
	s, err := captureHostNoWrite()
	require.NoError(t, err)
	v := machineView{Sysctls: s.Sysctls, Chains: s.Chains, LoAddr: loHasNodeIP(), Bridge: linkExists(RealNodeBridge)}
	for _, p := range realNodeMachinePaths {
		if _, err := os.Lstat(p); err == nil && p != "/run/containerd" {
			v.Paths = append(v.Paths, p)
		}
	}
	_, err = os.Stat(realNodeStateFile)
	v.StateFile = err == nil
	v.NodeDirs, _ = filepath.Glob(realNodeDirPrefix() + "*")
	v.KubepodsCgrps = len(kubepodsCgroups())
	v.Mounts = mountsUnder(realNodeDirPrefix())
	v.Processes = leftoverProcesses()
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/var/log/containers", e.Name())); err == nil && strings.HasPrefix(target, realNodeDirPrefix()) {
			v.ContainerLogs = append(v.ContainerLogs, e.Name())
		}
	}
	return v
}

// captureHostNoWrite is captureHost without the state file.
func captureHostNoWrite() (*hostState, error) {
	saved := realNodeStateFile
	realNodeStateFile = filepath.Join(os.TempDir(), fmt.Sprintf("atom-rnview-%d.json", os.Getpid()))
	defer func() { os.Remove(realNodeStateFile); realNodeStateFile = saved }()
	return captureHost("")
}

func leftoverProcesses() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmd), realNodeDirPrefix()) && e.Name() != fmt.Sprint(os.Getpid()) {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			if processAlive(pid) {
				out = append(out, strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}

// withMachine runs f holding the real-node lock, once what a killed run
// left is cleaned up, so no other test binary's real node changes the
// machine meanwhile.
func withMachine(t *testing.T, f func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	lock, err := machineLock(ctx, t.Logf)
	require.NoError(t, err)
	defer unlockMachine(lock)
	f()
}

// TestRealNodeKilledChild is the run TestRealNodeAfterKilledRun kills: it
// starts a cluster and a real node with a running Pod, says so and waits.
// It does nothing unless ATOM_REALNODE_CHILD is set.
func TestRealNodeKilledChild(t *testing.T) {
	if os.Getenv("ATOM_REALNODE_CHILD") == "" {
		return
	}
	c := Start(t, Options{Name: "killed"})
	n := c.AddRealNode(t, RealNodeOptions{Name: "doomed", GPUs: 1})
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "runs-on"},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{
			Name: "main", Image: ToolboxImage, ImagePullPolicy: corev1.PullNever, Args: []string{"wait"},
		}}},
	}
	_, err := c.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	c.WaitPodPhase(t, "default", "runs-on", corev1.PodRunning)
	fmt.Printf("REALNODE-CHILD-READY %s %s\n", c.Dir, n.Dir)
	time.Sleep(10 * time.Minute)
}

// TestRealNodeAfterKilledRun kills (SIGKILL) a test binary whose real node
// runs a Pod, as CI's next run finds the machine after a session was
// killed: the next real node cleans up what was left (shims, containers,
// mounts, cgroups, bridge, lo address, its directory) and runs Pods, and
// its teardown leaves the machine as it was before either.
func TestRealNodeAfterKilledRun(t *testing.T) {
	var before machineView
	withMachine(t, func() {
		old, err := readHostState()
		require.NoError(t, err)
		_, err = sweep("", old, false)
		require.NoError(t, err, "clean up before the test")
		os.Remove(realNodeStateFile)
		before = viewMachine(t)
	})
	require.False(t, before.Bridge, "bridge %s before any real node", RealNodeBridge)
	require.False(t, before.LoAddr, "%s on lo before any real node", RealNodeIP)

	// A run that is killed with its real node up.
	child := exec.Command(os.Args[0], "-test.run=^TestRealNodeKilledChild$", "-test.v", "-test.count=1")
	child.Env = append(os.Environ(), "ATOM_REALNODE_CHILD=1")
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = child.Stdout
	require.NoError(t, child.Start())
	ready := make(chan []string, 1)
	var mu sync.Mutex
	var childLog strings.Builder
	logged := func() string { mu.Lock(); defer mu.Unlock(); return childLog.String() }
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			childLog.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "REALNODE-CHILD-READY" {
				ready <- f[1:]
			}
		}
		close(ready)
	}()
	var dirs []string
	select {
	case dirs = <-ready:
	case <-time.After(10 * time.Minute):
	}
	require.Len(t, dirs, 2, "the child run did not start its real node: %s", logged())
	t.Cleanup(func() { os.RemoveAll(dirs[0]) }) // its control plane's, on /dev/shm
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	// What it left: the state file, its directory with mounts, a shim and
	// the container, the kubepods cgroups, the bridge and the lo address.
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(leftoverProcesses(), func(p string) bool {
			return strings.Contains(p, "kubelet") || strings.HasPrefix(p, "containerd ")
		})
	}, 15*time.Second, 50*time.Millisecond, "the killed run's kubelet and containerd die with it (parent-death signal)")
	left := viewMachine(t)
	assert.True(t, left.StateFile, "state file")
	assert.True(t, left.Bridge, "bridge")
	assert.True(t, left.LoAddr, "lo address")
	assert.Contains(t, left.NodeDirs, dirs[1])
	assert.NotEmpty(t, left.Mounts, "mounts")
	assert.NotZero(t, left.KubepodsCgrps, "kubepods cgroups")
	assert.True(t, slices.ContainsFunc(left.Processes, func(p string) bool { return strings.Contains(p, "containerd-shim-runc-v2") }), "a shim runs on: %v", left.Processes)

	// The next run cleans up and works, with an image imported under a
	// name of the test's choosing.
	c := Start(t, Options{})
	n := c.AddRealNode(t, RealNodeOptions{Name: "next"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	archive, err := programImage(ctx, "toolbox", ToolboxImage, toolboxSource)
	require.NoError(t, err)
	n.ImportImage(t, archive, "example.test/renamed:v2")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fine"},
		Spec: corev1.PodSpec{NodeName: n.Name, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "example.test/renamed:v2", ImagePullPolicy: corev1.PullNever, Args: []string{"print:fine"},
		}}},
	}
	_, err = c.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	c.WaitPodPhase(t, "default", "fine", corev1.PodSucceeded)
	_, err = os.Stat(dirs[1])
	assert.True(t, os.IsNotExist(err), "the killed run's node directory %s is removed: %v", dirs[1], err)

	// Teardown leaves the machine as it was before both runs.
	require.NoError(t, n.Close())
	withMachine(t, func() {
		after := viewMachine(t)
		assert.Equal(t, before, after, "the machine after teardown")
		assert.False(t, after.Bridge)
		assert.False(t, after.LoAddr)
		assert.Empty(t, after.Mounts)
		assert.Empty(t, after.Processes)
		assert.Empty(t, after.ContainerLogs)
		assert.Zero(t, after.KubepodsCgrps)
	})
}
