package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atomBin is the atom binary the tests run, built once by TestMain.
var atomBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "atom-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	atomBin = filepath.Join(dir, "atom")
	out, err := exec.Command("go", "build", "-o", atomBin, "github.com/atom-sched/atom/atom").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build atom: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// atomCmd is atom with args and a clean environment: no ATOM_* but env.
func atomCmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(atomBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	return cmd
}

// exitCode runs cmd to its end and returns its exit code and output.
func exitCode(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "output: %s", out)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestExitCodesPassThrough: atom exits with its job's status, 128+n when
// signal n killed it, whether or not it reaps as PID 1 would.
func TestExitCodesPassThrough(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		script string
		want   int
	}{
		"success":    {"echo out; echo err >&2", 0},
		"exit 3":     {"exit 3", 3},
		"sigkill":    {"kill -KILL $$", 128 + 9},
		"sigterm":    {"kill -TERM $$", 128 + 15},
		"orphan too": {`sh -c "exit 5" & exit 4`, 4}, // the orphan's status is not the job's
	}
	for name, tc := range cases {
		for _, reap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reap=%t", name, reap), func(t *testing.T) {
				t.Parallel()
				code, out := exitCode(t, atomCmd(t, nil, "run", fmt.Sprintf("--reap=%t", reap), "--", "sh", "-c", tc.script))
				assert.Equal(t, tc.want, code, "output: %s", out)
				if name == "success" {
					assert.Equal(t, "out\nerr\n", out, "stdout and stderr pass through, atom adds nothing")
				}
			})
		}
	}
}

// TestNoCommand: atom run without a command is a usage error.
func TestNoCommand(t *testing.T) {
	t.Parallel()
	code, out := exitCode(t, atomCmd(t, nil, "run"))
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "no command")
	code, out = exitCode(t, atomCmd(t, nil, "run", "--", "/nonexistent/cmd"))
	assert.Equal(t, 127, code)
	assert.Contains(t, out, "start /nonexistent/cmd")
}

// TestSIGTERMReachesChild: a SIGTERM to atom is forwarded to the job,
// whose trap decides the status atom exits with.
func TestSIGTERMReachesChild(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			ready := filepath.Join(t.TempDir(), "ready")
			script := fmt.Sprintf(`trap 'kill $!; exit 42' %s; sleep 100 & touch %s; wait`, strings.TrimPrefix(sigName(sig), "SIG"), ready)
			cmd := atomCmd(t, nil, "run", "--", "sh", "-c", script)
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, 10*time.Second, 10*time.Millisecond)
			require.NoError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 42, ee.ExitCode())
		})
	}
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT"}[s]
}

// TestPreflightCommand: without NVML (these machines have no driver) the
// preflight passes a CPU task and fails one that was allocated GPUs.
func TestPreflightCommand(t *testing.T) {
	t.Parallel()
	code, out := exitCode(t, atomCmd(t, nil, "preflight"))
	assert.Equal(t, 0, code)
	assert.Equal(t, "gpu_available=false\ngpu_count=0\ngpu_uuids=\npreflight=ok\n", out)

	code, out = exitCode(t, atomCmd(t, []string{"ATOM_ACCELERATORS=0,1", "ATOM_ACCEL_TYPE=A100"}, "preflight"))
	assert.Equal(t, 3, code)
	assert.Equal(t, "gpu_available=false\ngpu_count=0\ngpu_uuids=\n"+
		`preflight=failed reason="gpu preflight failed: nvml: accelerators allocated but NVML is not available (2 A100 allocated)"`+"\n", out)

	code, out = exitCode(t, atomCmd(t, []string{"ATOM_ACCELERATORS=zero"}, "preflight"))
	assert.Equal(t, 2, code)
	assert.Contains(t, out, `"zero" is not a device index`)
}

// TestRunPreflightFailsStandalone: a failed preflight exits 3 and never
// starts the command.
func TestRunPreflightFailsStandalone(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	code, out := exitCode(t, atomCmd(t, []string{"ATOM_ACCELERATORS=0"}, "run", "--", "touch", marker))
	assert.Equal(t, 3, code)
	assert.Contains(t, out, "accelerators allocated but NVML is not available")
	assert.NoFileExists(t, marker)
}

// TestNoRaftOrClientGo is a deptest: atom runs in every container and
// must stay small, so it never links Raft or the Kubernetes client.
func TestNoRaftOrClientGo(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/atom-sched/atom/atom").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"github.com/hashicorp/raft", "k8s.io/client-go", "github.com/prometheus/client_golang"} {
			assert.False(t, dep == bad || strings.HasPrefix(dep, bad+"/"), "atom depends on %s", dep)
		}
	}
}

// TestNothingOutlivesTheJob: processes the job left behind, even in
// another session (which a process-group kill misses), die when the job
// ends, as in a container whose PID 1 exits.
func TestNothingOutlivesTheJob(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := fmt.Sprintf("setsid sleep 301 & echo $! > %s; exit 0", pidFile)
	code, out := exitCode(t, atomCmd(t, nil, "run", "--", "sh", "-c", script))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "atom: the job ended; killed 1 process(es) it left behind")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond, "the orphan is killed")
}

// alive reports whether pid runs (exists and is not a zombie awaiting its
// reaper).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
