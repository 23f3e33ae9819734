package chaos_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atom-sched/atom/test/chaos"
)

// TestChaosShort is the short version of make chaos that make test runs:
// 25 s of faults and load on three real servers, then every promise is
// checked (about a minute in all on two cores).
func TestChaosShort(t *testing.T) {
	bin := t.TempDir()
	for _, p := range []string{"coordinator", "atom"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/atom-sched/atom/"+p).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", p, err, out)
		}
	}
	work, err := os.MkdirTemp("", "atom-chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, chaos.Options{Bin: bin, Work: work, Duration: 25 * time.Second, Log: &log})
	if err != nil {
		t.Fatalf("chaos: %v\n%s", err, log.String())
	}
	t.Logf("figures:\n%s", strings.Join(rep.Lines(), "\n"))
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("%d promises broke (servers' logs and task output kept in %s):\n  %s\nfault log:\n%s", len(f), work, strings.Join(f, "\n  "), log.String())
	}
	defer os.RemoveAll(work)
	if rep.Failovers == 0 || rep.SubmissionsAcked < 20 || rep.IndexesChecked == 0 || rep.UsageChecked == 0 {
		t.Errorf("the run was too quiet to prove anything: %d failovers, %d submissions, %d indexes, %d with usage recomputed",
			rep.Failovers, rep.SubmissionsAcked, rep.IndexesChecked, rep.UsageChecked)
	}
}
