package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// coordinatorBin is the coordinator binary the tests run, built once by
// TestMain.
var coordinatorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coordinator-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	coordinatorBin = filepath.Join(dir, "coordinator")
	out, err := exec.Command("go", "build", "-o", coordinatorBin, "github.com/atom-sched/atom/coordinator").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build coordinator: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// coordinator runs the binary with args and a clean environment (no
// ATOM_* but env) to its end, and returns its exit code, standard
// output and standard error.
func coordinator(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(coordinatorBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stderr: %s", errOut.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}
