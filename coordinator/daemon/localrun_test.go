package daemon_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// reports records what a LocalBackend reports, by task.
type reports struct {
	mu  sync.Mutex
	evs map[structs.TaskID][]structs.TaskEvent
}

func (r *reports) Report(id structs.TaskID, _ string, ev structs.TaskEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.State != "" {
		r.evs[id] = append(r.evs[id], ev)
	}
	return nil
}

// ended returns the task's final report, if it has one.
func (r *reports) ended(id structs.TaskID) (structs.TaskEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.evs[id] {
		if ev.State == structs.TaskSucceeded || ev.State == structs.TaskFailed {
			return ev, true
		}
	}
	return structs.TaskEvent{}, false
}

// newLocalBackend returns a LocalBackend over a fresh directory that runs
// tasks under atom ("" for none), closed when the test ends.
func newLocalBackend(t *testing.T, atom string) (*daemon.LocalBackend, *local.Backend, *reports) {
	t.Helper()
	run, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	r := &reports{evs: map[structs.TaskID][]structs.TaskEvent{}}
	lb := daemon.NewLocalBackend(run, r, "http://127.0.0.1:1", atom, time.Second, quiet())
	t.Cleanup(lb.Close)
	return lb, run, r
}

// fakeAtom writes a stand-in for the atom binary that prints its
// arguments and ATOM_PLUGIN_DIR and exits 0.
func fakeAtom(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "atom")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho \"args: $*\"\necho \"plugin dir: $ATOM_PLUGIN_DIR\"\n"), 0o755))
	return p
}

func localTask(j *structs.Job) *structs.Task {
	return &structs.Task{ID: structs.MakeTaskID(j.ID, 0, 0), Job: j.ID, Node: "cpu-1"}
}

// waitEnded waits for the task's final report.
func waitEnded(t *testing.T, r *reports, id structs.TaskID) structs.TaskEvent {
	t.Helper()
	var ev structs.TaskEvent
	require.Eventually(t, func() bool {
		var ok bool
		ev, ok = r.ended(id)
		return ok
	}, 10*time.Second, 10*time.Millisecond, "task %s never ended", id)
	return ev
}

// TestLocalBackendLetsTheJobTypeDecide: under atom, a job without a
// command (a spark job: its plugin builds spark-submit) is atom's to run,
// with no "--"; atom gets the stop grace and the plugin directory.
func TestLocalBackendLetsTheJobTypeDecide(t *testing.T) {
	atom := fakeAtom(t)
	lb, run, r := newLocalBackend(t, atom)
	lb.Grace, lb.PluginDir = 30*time.Second, "/opt/atom/plugins"

	spark := &structs.Job{ID: "clean-1", Kind: structs.KindSpark, Replicas: 1}
	st := localTask(spark)
	require.NoError(t, lb.Start(backend.Launch{Task: st, Job: spark, Token: "tok"}))
	assert.Equal(t, structs.TaskSucceeded, waitEnded(t, r, st.ID).State)
	out, err := os.ReadFile(run.LogPath(string(st.ID)))
	require.NoError(t, err)
	assert.Equal(t, "args: run --grace 30s\nplugin dir: /opt/atom/plugins\n", string(out))

	cmd := &structs.Job{ID: "hello-1", Kind: structs.KindCommand, Replicas: 1, Command: []string{"echo"}, Args: []string{"hi"}}
	ct := localTask(cmd)
	require.NoError(t, lb.Start(backend.Launch{Task: ct, Job: cmd, Token: "tok"}))
	assert.Equal(t, structs.TaskSucceeded, waitEnded(t, r, ct.ID).State)
	out, err = os.ReadFile(run.LogPath(string(ct.ID)))
	require.NoError(t, err)
	assert.Equal(t, "args: run --grace 30s -- echo hi\nplugin dir: /opt/atom/plugins\n", string(out))
}

// TestLocalBackendWithoutAtomNeedsACommand: run bare, a job without a
// command fails at once and says so; with a command, the plugin dir is
// still in its environment.
func TestLocalBackendWithoutAtomNeedsACommand(t *testing.T) {
	lb, run, r := newLocalBackend(t, "")
	lb.PluginDir = "/opt/atom/plugins"

	spark := &structs.Job{ID: "clean-1", Kind: structs.KindSpark, Replicas: 1}
	st := localTask(spark)
	require.NoError(t, lb.Start(backend.Launch{Task: st, Job: spark, Token: "tok"}))
	ev := waitEnded(t, r, st.ID)
	assert.Equal(t, structs.TaskFailed, ev.State)
	assert.Contains(t, ev.Message, "the job has no command")

	cmd := &structs.Job{ID: "env-1", Kind: structs.KindCommand, Replicas: 1, Command: []string{"sh", "-c", "echo $ATOM_PLUGIN_DIR"}}
	ct := localTask(cmd)
	require.NoError(t, lb.Start(backend.Launch{Task: ct, Job: cmd, Token: "tok"}))
	assert.Equal(t, structs.TaskSucceeded, waitEnded(t, r, ct.ID).State)
	out, err := os.ReadFile(run.LogPath(string(ct.ID)))
	require.NoError(t, err)
	assert.Equal(t, "/opt/atom/plugins\n", string(out))
}

// TestLocalBackendConfigs: a task gets a config as files under
// $ATOM_CONFIG_ROOT and as environment variables, the job's own env
// winning over a config's key; a value with a NUL byte cannot be an
// environment variable: the task fails saying so, naming the key only.
// The configs go when the task ends, as a Pod's volumes do.
func TestLocalBackendConfigs(t *testing.T) {
	lb, run, r := newLocalBackend(t, "")
	ref := structs.ConfigRef{Config: "train", MountPath: "/etc/train", Owner: "user:u1"}
	env := structs.ConfigRef{Secret: "db", Env: true, Owner: "user:u1"}
	data := structs.ConfigData{"lr": []byte("0.1"), "USER_VAR": []byte("from-config"), "PW": []byte("pw")}
	lb.Configs = func(*structs.Task, *structs.Job) ([]taskenv.Config, error) {
		return []taskenv.Config{{Ref: ref, Version: 1, Data: data}, {Ref: env, Version: 1, Data: data}}, nil
	}
	j := &structs.Job{ID: "c-1", Kind: structs.KindCommand, Replicas: 1, Env: map[string]string{"USER_VAR": "from-job"},
		Command: []string{"sh", "-c", `cat $ATOM_CONFIG_ROOT/etc/train/lr; echo " $PW $USER_VAR"`}, Configs: []structs.ConfigRef{ref, env}}
	tk := localTask(j)
	tk.Configs = []structs.TaskConfig{{ConfigID: ref.ID(), Version: 1}, {ConfigID: env.ID(), Version: 1}}
	require.NoError(t, lb.Start(backend.Launch{Task: tk, Job: j, Token: "tok"}))
	assert.Equal(t, structs.TaskSucceeded, waitEnded(t, r, tk.ID).State)
	out, err := os.ReadFile(run.LogPath(string(tk.ID)))
	require.NoError(t, err)
	assert.Equal(t, "0.1 pw from-job\n", string(out))
	_, err = os.Stat(filepath.Join(filepath.Dir(run.LogPath(string(tk.ID))), "configs"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a task's configs go when it ends")

	data["PW"] = []byte("a\x00b")
	j2 := *j
	j2.ID = "c-2"
	tk2 := localTask(&j2)
	tk2.Configs = tk.Configs
	require.NoError(t, lb.Start(backend.Launch{Task: tk2, Job: &j2, Token: "tok"}))
	ev := waitEnded(t, r, tk2.ID)
	assert.Equal(t, structs.TaskFailed, ev.State)
	assert.Contains(t, ev.Message, "configs: secret db (user:u1): key PW holds a NUL byte, which an environment variable cannot: mount it as a file instead")
}
