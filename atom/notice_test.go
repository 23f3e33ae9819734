package main_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// checkpointer counts in steps, saving its count to DIR/ckpt when told it
// is preempted (SIGUSR1, the notice file), and resumes from it: an
// attempt that resumed ends after 5 more steps.
const checkpointer = `ckpt=DIR/ckpt; n=$(cat $ckpt 2>/dev/null || echo 0); start=$n
echo "start $ATOM_ATTEMPT $n" >> DIR/log
trap 'echo $n > $ckpt.tmp && mv $ckpt.tmp $ckpt; echo "notice $n $(cat "$ATOM_PREEMPT_NOTICE_FILE")" >> DIR/log' USR1
trap 'echo "term $(date +%s)" >> DIR/log; exit 143' TERM
while :; do
  n=$((n+1)); echo $n > DIR/step; sleep 0.1 & wait $!
  if [ $start -gt 0 ] && [ $n -ge $((start+5)) ]; then echo "done $n" >> DIR/log; exit 0; fi
done`

// TestPreemptNoticeThenResume: a low job with a preemptNotice, preempted
// on the local backend under atom, finds the notice file with its
// deadline and gets SIGUSR1 before SIGTERM (at the deadline, not
// before), checkpoints, and its next attempt resumes from the checkpoint.
func TestPreemptNoticeThenResume(t *testing.T) {
	t.Parallel()
	c := startDevAtom(t)
	dir := t.TempDir()
	logf := filepath.Join(dir, "log")
	v100 := map[string]any{"accelerators": map[string]any{"type": "V100", "count": 4}}

	low := submitSpec(t, c, map[string]any{"kind": "command", "name": "trainer", "priority": "low", "resources": v100,
		"preemptNotice": map[string]any{"signal": "SIGUSR1", "seconds": 2},
		"command":       []string{"sh", "-c", strings.ReplaceAll(checkpointer, "DIR", dir)}})
	if !assert.Eventually(t, func() bool {
		b, _ := os.ReadFile(logf)
		return strings.Contains(string(b), "start 0 0")
	}, 20*time.Second, 20*time.Millisecond) {
		t.Fatalf("the job did not start: %s", jobNow(c, low))
	}
	require.Eventually(t, func() bool { // a few steps to checkpoint
		b, _ := os.ReadFile(filepath.Join(dir, "step"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n >= 3
	}, 20*time.Second, 20*time.Millisecond, "the job counts its steps")
	preemptedAt := time.Now()
	normal := submitSpec(t, c, map[string]any{"kind": "command", "name": "urgent", "resources": v100,
		"command": []string{"true"}})

	assert.Equal(t, structs.JobSucceeded, waitJob(t, c, normal).State)
	assert.Equal(t, structs.JobSucceeded, waitJob(t, c, low).State)
	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 5, "log: %s", b)
	assert.Equal(t, "start 0 0", lines[0])
	notice := strings.Fields(lines[1]) // notice N DEADLINE
	require.Len(t, notice, 3, "log: %s", b)
	require.Equal(t, "notice", notice[0], "the notice comes before SIGTERM; log: %s", b)
	deadline, err := time.Parse(time.RFC3339Nano, notice[2])
	require.NoError(t, err)
	assert.WithinRange(t, deadline, preemptedAt.Add(2*time.Second), preemptedAt.Add(4*time.Second))
	term := strings.Fields(lines[2])
	require.Equal(t, "term", term[0], "log: %s", b)
	at, err := strconv.ParseInt(term[1], 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, at, deadline.Unix(), "SIGTERM came before the notice's deadline")
	assert.Equal(t, "start 1 "+notice[1], lines[3], "the next attempt resumes from the checkpoint")
	n, _ := strconv.Atoi(notice[1])
	assert.Equal(t, "done "+strconv.Itoa(n+5), lines[4])

	evs, err := c.JobEvents(context.Background(), low, client.EventQuery{})
	require.NoError(t, err)
	var pre *structs.Event
	for i := range evs.Events {
		if evs.Events[i].Type == structs.EventPreempted {
			pre = &evs.Events[i]
		}
	}
	require.NotNil(t, pre)
	assert.Equal(t, normal, pre.Related)
	require.NotNil(t, pre.Freed)
	assert.Equal(t, int64(4), pre.Freed.Accels)
	assert.Contains(t, pre.Message, "after a 2s notice")
}

// startDevAtom starts coordinator dev's cluster on one server with real
// Raft, whose local backend runs each task under this atom.
func startDevAtom(t *testing.T) *client.Client {
	t.Helper()
	tokens, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: " + adminToken + ", admin: true}\n"))
	require.NoError(t, err)
	cluster, err := daemon.DevCluster()
	require.NoError(t, err)
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Tokens: tokens, Cluster: cluster, Atom: atomBin,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	cfg.Server = server.Config{ID: "dev", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true,
		HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond, StopGrace: 5 * time.Second}
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return client.New(d.URL, adminToken)
}

// TestPreemptNoticeExample runs the checkpointing job README.md shows
// (its notice cut to 5 s, as the job looks once a second and a loaded
// machine can be late; its directory a temporary one): preempted, it sees
// the notice file while it still runs, saves its step, and its next
// attempt resumes from that step.
func TestPreemptNoticeExample(t *testing.T) {
	t.Parallel()
	c := startDevAtom(t)
	spec := readmeJob(t, "name: trainer")
	dir := t.TempDir()
	spec["env"] = map[string]any{"CKPT": dir}
	spec["preemptNotice"] = map[string]any{"seconds": 5}
	low := submitSpec(t, c, spec)
	ctx := context.Background()
	logs := func() string {
		var b strings.Builder
		_ = c.LogsWith(ctx, low, client.LogOptions{All: true}, &b)
		return b.String()
	}
	require.Eventually(t, func() bool {
		return strings.Contains(logs(), "attempt 1 resumes at step 0")
	}, 20*time.Second, 50*time.Millisecond, "the job runs")
	normal := submitSpec(t, c, map[string]any{"kind": "command", "name": "urgent", "command": []string{"true"},
		"resources": map[string]any{"accelerators": map[string]any{"type": "V100", "count": 4}}})
	assert.Equal(t, structs.JobSucceeded, waitJob(t, c, normal).State)
	var out string
	require.Eventually(t, func() bool {
		out = logs()
		return strings.Contains(out, "attempt 2 resumes")
	}, 30*time.Second, 50*time.Millisecond, "the job is placed again once the preemptor ends")
	b, err := os.ReadFile(filepath.Join(dir, "step"))
	require.NoError(t, err)
	step := strings.TrimSpace(string(b))
	_, err = strconv.Atoi(step)
	require.NoError(t, err, "the checkpoint is a step: %q", step)
	assert.Contains(t, out, "checkpointed step "+step+", stopped by ", "it saw the notice while it ran: %s", out)
	assert.Contains(t, out, "attempt 2 resumes at step "+step)
	_, err = c.CancelJob(ctx, low)
	require.NoError(t, err)
}

// readmeJob is the job spec of README.md's yaml block containing marker.
func readmeJob(t *testing.T, marker string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if !strings.Contains(block, marker) {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(block))
		require.NoError(t, err)
		var spec map[string]any
		require.NoError(t, json.Unmarshal(js, &spec))
		return spec
	}
	t.Fatalf("README.md has no yaml block with %q", marker)
	return nil
}

// submitSpec submits spec and returns the job's ID.
func submitSpec(t *testing.T, c *client.Client, spec map[string]any) structs.JobID {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	var id structs.JobID
	require.Eventually(t, func() bool {
		r, err := c.SubmitJob(context.Background(), b, "req-"+spec["name"].(string))
		if err == nil {
			id = r.JobID
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	return id
}

func jobNow(c *client.Client, id structs.JobID) any {
	st, err := c.Job(context.Background(), id)
	if err != nil {
		return err
	}
	w, _ := c.Why(context.Background(), id)
	b, _ := json.Marshal(st)
	bw, _ := json.Marshal(w)
	return string(b) + string(bw)
}
