package demo_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/test/demo"
	"github.com/atom-sched/atom/test/testbin"
)

var binDir string

// TestMain builds what make demo builds, side by side in a temporary
// directory.
func TestMain(m *testing.M) {
	testbin.Main(m, &binDir, map[string]string{"atom-demo-web": "test/demo/web"})
}

// syncBuffer is the narration, written by Run and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// onLine is called with each write.
	onWrite func(string)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onWrite != nil {
		b.onWrite(string(p))
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func requireMPI(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("mpicc")
	require.NoError(t, err, "mpicc is missing: install openmpi-bin and libopenmpi-dev (make demo does)")
}

// assertNothingLeft checks that no process of the demo runs: none whose
// command line (pgrep) or environment mentions the work dir.
func assertNothingLeft(t *testing.T, work string) {
	t.Helper()
	out, _ := exec.Command("pgrep", "-af", work).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "pgrep -f finds processes of the demo")
	assert.Empty(t, demo.DemoProcesses(work), "processes whose environment mentions the work dir")
}

// TestDemo runs make demo's scenario: every step happens as narrated, and
// nothing is left running.
func TestDemo(t *testing.T) {
	requireMPI(t)
	work := t.TempDir()
	out := &syncBuffer{}
	start := time.Now()
	err := demo.Run(context.Background(), demo.Config{BinDir: binDir, WorkDir: work, Out: out})
	t.Logf("demo took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Log(out.String())
	}
	require.NoError(t, err)
	narration := out.String()
	for _, want := range []string{
		"alice$ coordinator job submit -f train-bev.yaml --wait",
		"quota exceeded for user:bob: gpu/V100 quota 4, in use 4, requested 1",
		"Stopped: Preempted",
		"sum=10 size=4",
		"demo passed: every step happened as narrated",
		"/ui/ and sign in with a token:",
	} {
		assert.Contains(t, narration, want)
	}
	assert.Regexp(t, `open http://127\.0\.0\.1:\d+/ui/ and sign in with a token:\n#   alice [0-9a-f]{32}   ops \(an admin, sees every job\) [0-9a-f]{32}\n`, narration)
	assertNothingLeft(t, work)
}

// TestDemoInterrupted cancels the demo (as Ctrl-C does) right after the
// leader is killed, while the tasks it started run on: Run names the step
// it was in, and cancels the jobs and stops the servers without having to
// kill anything.
func TestDemoInterrupted(t *testing.T) {
	requireMPI(t)
	work := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, "From now on the CLI talks to") {
			cancel()
		}
	}}
	err := demo.Run(ctx, demo.Config{BinDir: binDir, WorkDir: work, Out: out})
	require.Error(t, err)
	var se *demo.StepError
	if !errors.As(err, &se) || se.Step != 5 || !errors.Is(err, context.Canceled) {
		t.Log(out.String())
		t.Fatalf("want step 5 interrupted, got: %v", err)
	}
	assert.NotContains(t, err.Error(), "shutting down", "the jobs were cancelled and the servers stopped in order")
	assertNothingLeft(t, work)
}
