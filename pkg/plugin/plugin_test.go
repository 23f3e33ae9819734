package plugin_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/atom-sched/atom/pkg/plugin"
)

// The test binary doubles as a plugin process: with ATOM_TEST_SERVE set it
// serves the test job type named by its last argument, or, run without
// arguments as a copy named atom-plugin-KIND, job type KIND.
func TestMain(m *testing.M) {
	if os.Getenv("ATOM_TEST_SERVE") != "" {
		kind := os.Args[len(os.Args)-1]
		if k, ok := strings.CutPrefix(filepath.Base(kind), plugin.BinaryPrefix); ok {
			kind = k
		}
		if kind == "oldwire" { // a plugin built for another protocol version
			hs := plugin.Handshake
			hs.ProtocolVersion = 99
			goplugin.Serve(&goplugin.ServeConfig{HandshakeConfig: hs, GRPCServer: goplugin.DefaultGRPCServer,
				Plugins: goplugin.PluginSet{plugin.PluginName: &plugin.GRPCPlugin{Impl: testTypes["echo"]()}}})
			os.Exit(0)
		}
		plugin.Serve(testTypes[kind]())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echo returns the task's fields in its Exec, so a round trip shows what
// crossed the wire.
type echo struct {
	kind string
	apis []string
}

func (e echo) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: e.kind, APIVersions: e.apis, Version: "0.1"}, nil
}

func (e echo) Prepare(_ context.Context, api string, t plugin.Task) (plugin.Exec, error) {
	if t.Replica < 0 {
		return plugin.Exec{}, errors.New("replica must be 0 or more")
	}
	if t.Replica == 99 {
		os.Exit(7) // a crash mid-call
	}
	return plugin.Exec{
		Argv:          append([]string{api, t.Job, t.ID, t.Kind, t.Dir, t.Coordinator, t.Token, t.AccelType, string(t.JobJSON)}, t.Command...),
		Env:           map[string]string{"X": t.Env["X"], "N": string(rune('0' + t.Replica + t.Replicas + t.Attempt + t.Accelerators))},
		ServeLaunches: t.Replica > 0,
	}, nil
}

var testTypes = map[string]plugin.Factory{
	"echo":   func() plugin.JobType { return echo{kind: "echo", apis: []string{"v0", "v1"}} },
	"liar":   func() plugin.JobType { return echo{kind: "other", apis: []string{"v1"}} },
	"future": func() plugin.JobType { return echo{kind: "future", apis: []string{"v9"}} },
}

func catalog() *plugin.Catalog {
	c := plugin.NewCatalog()
	for k, f := range testTypes {
		c.Register(k, f)
	}
	return c
}

// outOfProcess serves built-ins by re-executing the test binary.
func outOfProcess(t *testing.T) *plugin.Loader {
	t.Setenv("ATOM_TEST_SERVE", "1")
	return &plugin.Loader{Catalog: catalog(), Self: []string{os.Args[0]}}
}

var task = plugin.Task{
	Job: "j1", ID: "j1-1-ab12", Kind: "echo", Replica: 1, Replicas: 2, Attempt: 3,
	Command: []string{"python", "train.py"}, Env: map[string]string{"X": "y"}, Dir: "/work",
	Coordinator: "http://c:1", Token: "tok", JobJSON: []byte(`{"kind":"echo"}`), AccelType: "A100", Accelerators: 2,
}

func TestPrepareRoundTrip(t *testing.T) {
	want := plugin.Exec{
		Argv:          []string{"v1", "j1", "j1-1-ab12", "echo", "/work", "http://c:1", "tok", "A100", `{"kind":"echo"}`, "python", "train.py"},
		Env:           map[string]string{"X": "y", "N": "8"},
		ServeLaunches: true,
	}
	for name, l := range map[string]*plugin.Loader{
		"in-process":     {Catalog: catalog()},
		"out-of-process": outOfProcess(t),
	} {
		t.Run(name, func(t *testing.T) {
			h, err := l.Open(context.Background(), "echo")
			require.NoError(t, err)
			defer h.Close()
			assert.Equal(t, "v1", h.API, "the newest version both speak")
			got, err := h.Prepare(context.Background(), h.API, task)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestRefusalCarriesThePluginsMessage(t *testing.T) {
	h, err := outOfProcess(t).Open(context.Background(), "echo")
	require.NoError(t, err)
	defer h.Close()
	bad := task
	bad.Replica = -1
	_, err = h.Prepare(context.Background(), h.API, bad)
	require.EqualError(t, err, "replica must be 0 or more")
	assert.False(t, errors.Is(err, plugin.ErrPluginExited))
}

func TestCrashFailsTheCallNotTheHost(t *testing.T) {
	h, err := outOfProcess(t).Open(context.Background(), "echo")
	require.NoError(t, err)
	defer h.Close()
	crash := task
	crash.Replica = 99
	_, err = h.Prepare(context.Background(), h.API, crash)
	require.ErrorIs(t, err, plugin.ErrPluginExited)
	assert.Contains(t, err.Error(), "plugin exited during prepare")
}

func TestOpenRefuses(t *testing.T) {
	l := outOfProcess(t)
	_, err := l.Open(context.Background(), "spark")
	require.ErrorIs(t, err, plugin.ErrUnknownKind)
	assert.EqualError(t, err, `unknown job kind "spark": atom runs [echo future liar] and plugins named atom-plugin-<kind> in ""`)

	_, err = l.Open(context.Background(), "liar")
	assert.EqualError(t, err, `plugin for kind "liar" says it runs kind "other": rename it atom-plugin-other`)

	_, err = l.Open(context.Background(), "future")
	assert.EqualError(t, err, `job type "future" speaks API versions [v9], atom speaks [v1]: use a plugin built for one of atom's versions`)
}

// An executable atom-plugin-KIND in the plugin directory runs that kind,
// ahead of a built-in.
func TestExternalPluginWins(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nexec " + os.Args[0] + " echo\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-liar"), []byte(script), 0o755))
	l := outOfProcess(t)
	l.Dir = dir
	// The built-in "liar" would be refused; the external one serves echo,
	// which is refused for naming the wrong kind: proof it ran.
	_, err := l.Open(context.Background(), "liar")
	assert.EqualError(t, err, `plugin for kind "liar" says it runs kind "echo": rename it atom-plugin-echo`)
	l.Catalog = plugin.NewCatalog()
	require.NoError(t, os.Rename(filepath.Join(dir, "atom-plugin-liar"), filepath.Join(dir, "atom-plugin-echo")))
	h, err := l.Open(context.Background(), "echo")
	require.NoError(t, err)
	h.Close()
}

// A "plugin" that never says hello is given up on after the start
// timeout, and what it started is killed with it: the task fails, it
// does not hang.
func TestPluginThatNeverStarts(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := "#!/bin/sh\nsleep 1000 &\necho $! > " + pidFile + "\nwait\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atom-plugin-hang"), []byte(script), 0o755))
	l := &plugin.Loader{Catalog: plugin.NewCatalog(), Dir: dir, StartTimeout: 300 * time.Millisecond, Stderr: io.Discard}
	_, err := l.Open(context.Background(), "hang")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `start plugin for kind "hang"`)
	assert.NotContains(t, err.Error(), "\n", "one line, fit for a task's reason")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 10*time.Millisecond,
		"the plugin's own child is killed too")
}
