// Package ui tests the web dashboard in a real browser: headless Debian
// Chromium driven by npm's playwright-core (browser.cjs), against a
// coordinator dev cluster running real jobs under atom. make deps-ui
// installs Chromium and playwright-core.
package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/test/testbin"
)

var binDir string

func TestMain(m *testing.M) {
	testbin.Main(m, &binDir, nil)
}

const (
	aliceToken = "alice-ui-token-0123456789"
	bobToken   = "bob-ui-token-0123456789ab"
	adminToken = "admin-ui-token-0123456789"
)

// cluster: one GPU node (2 A100) and one 8-core CPU node in the public
// pool; alice's quota takes all of it.
const cluster = `clusters: [{name: local, backend: local}]
nodes:
  - {name: gpu-1, cpu: "16", memory: 64Gi, accelerators: {type: A100, count: 2}}
  - {name: cpu-1, cpu: "8", memory: 32Gi}
quotas:
  - {scope: "user:alice", limits: {gpu/A100: 4, cpu: "16", memory: 64Gi}}
`

// playwright is where make deps-ui installed playwright-core.
func playwright(t *testing.T) string {
	dir := os.Getenv("ATOM_PLAYWRIGHT")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			require.NoError(t, err)
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "atom", "playwright-core-"+playwrightVersion)
	}
	_, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json"))
	require.NoError(t, err, "playwright-core %s is not installed in %s: run make deps-ui", playwrightVersion, dir)
	return dir
}

// playwrightVersion is package.json's pin (TestPinned checks they agree).
const playwrightVersion = "1.61.1"

func TestPinned(t *testing.T) {
	b, err := os.ReadFile("package.json")
	require.NoError(t, err)
	assert.Contains(t, string(b), `"playwright-core": "`+playwrightVersion+`"`)
}

func lookPath(t *testing.T, env, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	require.NoError(t, err, "%s is missing: make deps-ui installs it (apt-get install chromium nodejs npm)", name)
	return p
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// TestDashboard runs browser.cjs against coordinator dev: sign in; a
// submitted job in Jobs and Queue with why it waits; a low job preempted
// by a normal one, both with their events; the Nodes page showing the
// GPUs the running job holds; a running task's log followed as it is
// written; a job's Spec as submitted; a job cancelled from its page; another user who sees none of
// it. Screenshots of each page go to the test's artifact directory (go
// test -artifacts keeps them).
func TestDashboard(t *testing.T) {
	node, chromium := lookPath(t, "ATOM_NODE", "node"), lookPath(t, "ATOM_CHROMIUM", "chromium")
	modules := filepath.Join(playwright(t), "node_modules")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(fmt.Sprintf(
		"users:\n  - {name: alice, token: %s}\n  - {name: bob, token: %s}\n  - {name: admin, token: %s, admin: true}\n",
		aliceToken, bobToken, adminToken)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(cluster), 0o600))

	addr := freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "coordinator.log"))
	require.NoError(t, err)
	defer logf.Close()
	cmd := exec.Command(filepath.Join(binDir, "coordinator"), "dev", "--http-addr", addr, "--data-dir", filepath.Join(dir, "data"),
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--cluster-config", filepath.Join(dir, "cluster.yaml"),
		"--cycle", "100ms", "--heartbeat-ttl", "3s")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("coordinator log:\n%s", b)
		}
	}()
	url := "http://" + addr
	c := client.New(url, adminToken)
	require.Eventually(t, func() bool {
		n, err := c.Nodes(context.Background())
		return err == nil && len(n) == 2
	}, 30*time.Second, 50*time.Millisecond, "coordinator dev has its nodes")

	out := t.ArtifactDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, node, "browser.cjs")
	run.Env = append(os.Environ(), "NODE_PATH="+modules, "ATOM_URL="+url, "ALICE_TOKEN="+aliceToken, "BOB_TOKEN="+bobToken,
		"OUT="+out, "CHROMIUM="+chromium)
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	run.Stderr = run.Stdout
	require.NoError(t, run.Start())
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		t.Log(sc.Text())
		lines = append(lines, sc.Text())
	}
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, run.Wait(), "browser.cjs failed:\n%s", strings.Join(lines, "\n"))
	require.NotEmpty(t, lines)
	assert.Equal(t, "all steps passed", lines[len(lines)-1])

	for _, name := range []string{"overview", "queue", "jobs", "job", "job-logs", "job-preempting", "quotas", "nodes", "other-user-nodes"} {
		st, err := os.Stat(filepath.Join(out, name+".png"))
		if assert.NoError(t, err, "screenshot %s", name) {
			assert.Greater(t, st.Size(), int64(10<<10), "screenshot %s has something on it", name)
		}
	}
	t.Logf("screenshots in %s", out)
}
