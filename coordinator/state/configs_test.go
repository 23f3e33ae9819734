package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// putConfig is a ConfigPut of a config of owner with data, at version.
func putConfig(owner structs.Scope, name string, version int, data structs.ConfigData) *state.ConfigPut {
	return &state.ConfigPut{ID: structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: owner, Name: name}, Create: version == 1,
		Version: version, Keys: data.Keys(), Digest: data.Digest(), Data: data, By: "u1", Now: t0}
}

func withConfigs(j *structs.Job, refs ...structs.ConfigRef) *structs.Job {
	j.Configs = refs
	return j
}

// A config is created at version 1; an update makes version 2; the same
// data again makes none (a retried create is answered as done); a
// create of one that exists with other data, an update of one that does
// not, and an update raced by another are refused.
func TestConfigVersions(t *testing.T) {
	l := newLogged(t)
	v1 := structs.ConfigData{"lr": []byte("0.1")}
	v2 := structs.ConfigData{"lr": []byte("0.2"), "bin": {0, 0xff, 1}}
	assert.Equal(t, state.ConfigPutResult{Version: 1}, l.must(putConfig("user:u1", "train", 1, v1)))
	assert.Equal(t, state.ConfigPutResult{Version: 1, Existing: true}, l.must(putConfig("user:u1", "train", 1, v1)), "a retried create")
	_, err := l.do(putConfig("user:u1", "train", 1, v2))
	assert.ErrorIs(t, err, state.ErrExists)
	_, err = l.do(putConfig("user:u1", "other", 2, v2))
	assert.ErrorIs(t, err, state.ErrNotFound)
	_, err = l.do(putConfig("user:u1", "train", 3, v2))
	assert.ErrorIs(t, err, state.ErrExists, "an update for a version not the next is a race")
	assert.Equal(t, state.ConfigPutResult{Version: 2}, l.must(putConfig("user:u1", "train", 2, v2)))
	assert.Equal(t, state.ConfigPutResult{Version: 2, Unchanged: true}, l.must(putConfig("user:u1", "train", 3, v2)))

	o := l.s.Config(structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: "user:u1", Name: "train"})
	require.NotNil(t, o)
	require.Len(t, o.Versions, 1, "no task uses version 1: not kept")
	assert.Equal(t, v2, o.Current().Data, "binary values are kept exactly")
	assert.Equal(t, []structs.ConfigKey{{Key: "bin", Size: 3}, {Key: "lr", Size: 3}}, o.Current().Keys)

	for _, c := range []*state.ConfigPut{
		putConfig("user:u1", "Bad_Name", 1, v1),
		putConfig("alice", "x", 1, v1),
		putConfig("user:u1", "x", 1, structs.ConfigData{"a/b": nil}),
		putConfig("user:u1", "x", 1, structs.ConfigData{}),
		putConfig("user:u1", "x", 1, structs.ConfigData{"big": make([]byte, structs.MaxConfigBytes)}),
		{ID: structs.ConfigID{Kind: structs.ConfigKindSecret, Owner: "user:u1", Name: "s"}, Create: true, Version: 1, Digest: "d",
			Keys: v1.Keys(), Data: v1}, // a secret in plain
	} {
		_, err := l.do(c)
		assert.ErrorIs(t, err, state.ErrInvalid, "%+v", c.ID)
	}
}

// A job names configs and secrets of its project or its owner, or of
// another project its owner is a member of; one not found, one of a
// project the owner is not in, and a ConfigMap where there is no
// kubernetes cluster are refused at submit, changing nothing. A secret
// not found is a Kubernetes Secret once there is a kubernetes cluster.
func TestSubmitResolvesConfigs(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: "perception", Project: "perception", Members: []structs.UserID{"u1"}}})
	l.must(&state.PoolUpsert{Pool: &structs.Pool{Name: "mapping", Project: "mapping", Members: []structs.UserID{"u2"}}})
	data := structs.ConfigData{"k": []byte("v")}
	l.must(putConfig("user:u1", "train", 1, data))
	l.must(putConfig("project:perception", "train", 1, data))
	l.must(putConfig("project:perception", "shared", 1, data))
	l.must(putConfig("project:mapping", "maps", 1, data))

	l.must(&state.JobSubmit{Job: withConfigs(job("a-1", st.NewJob("a", "u1").Low().CPU(1, 1)),
		structs.ConfigRef{Config: "train", MountPath: "/etc/train"}, structs.ConfigRef{Config: "perception/shared", Env: true}), Now: t0})
	assert.Equal(t, []structs.ConfigRef{{Config: "train", MountPath: "/etc/train", Owner: "user:u1"},
		{Config: "shared", Env: true, Owner: "project:perception"}}, l.s.Jobs["a-1"].Configs)
	p := st.NewJob("b", "u1").Low().CPU(1, 1).Obj()
	p.Project = "perception"
	p.ID = "b-1"
	l.must(&state.JobSubmit{Job: withConfigs(p, structs.ConfigRef{Config: "train", Env: true}), Now: t0})
	assert.Equal(t, structs.Scope("project:perception"), l.s.Jobs["b-1"].Configs[0].Owner, "a project's job finds its project's first")

	before := l.s.Index
	for _, tc := range []struct {
		ref  structs.ConfigRef
		err  error
		want string
	}{
		{structs.ConfigRef{Config: "nope", Env: true}, state.ErrInvalid, "configs[0]: no config nope (looked in user:u1): create it first (coordinator config create nope ...)"},
		{structs.ConfigRef{Secret: "train", Env: true}, state.ErrInvalid, "no secret train"},
		{structs.ConfigRef{Config: "mapping/maps", Env: true}, sched.ErrNotAllowed, "configs[0]: config maps belongs to project mapping, and user u1 is not a member of it"},
		{structs.ConfigRef{Config: "u2/notes", Env: true}, state.ErrInvalid,
			"configs[0]: config u2/notes: u2 is not a project: PROJECT/NAME names a project's config; a user's own are named without a prefix (notes), and no user may use another's"},
		{structs.ConfigRef{ConfigMap: "cm", Env: true}, state.ErrInvalid, "configMap cm names a Kubernetes ConfigMap, and this coordinator has no kubernetes cluster"},
	} {
		_, err := l.do(&state.JobSubmit{Job: withConfigs(job("c-1", st.NewJob("c", "u1").Low().CPU(1, 1)), tc.ref), Now: t0})
		require.ErrorIs(t, err, tc.err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		assert.Nil(t, l.s.Jobs["c-1"])
	}
	assert.Greater(t, l.s.Index, before)

	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "k", Backend: "kubernetes"}})
	l.must(&state.JobSubmit{Job: withConfigs(job("d-1", st.NewJob("d", "u1").Low().CPU(1, 1)),
		structs.ConfigRef{Secret: "wandb", Env: true}, structs.ConfigRef{ConfigMap: "cm", MountPath: "/cm"}), Now: t0})
	assert.Equal(t, []structs.ConfigRef{{Secret: "wandb", Env: true}, {ConfigMap: "cm", MountPath: "/cm"}}, l.s.Jobs["d-1"].Configs,
		"Kubernetes objects by name")
}

// A task gets the versions current when it is placed, and keeps them
// when the config changes; the state keeps a version while a task holding
// resources uses it. A config a job not ended names cannot be deleted:
// the refusal names the jobs.
func TestTaskConfigVersionsAndDelete(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	id := structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: "user:u1", Name: "train"}
	l.must(putConfig("user:u1", "train", 1, structs.ConfigData{"k": []byte("1")}))
	l.must(&state.JobSubmit{Job: withConfigs(job("a-1", st.NewJob("a", "u1").Low().CPU(1, 1)), structs.ConfigRef{Config: "train", Env: true}), Now: t0})
	l.cycle(t0)
	tk := l.live("a-1")
	assert.Equal(t, []structs.TaskConfig{{ConfigID: id, Version: 1}}, tk.Configs)

	l.must(putConfig("user:u1", "train", 2, structs.ConfigData{"k": []byte("2")}))
	assert.Equal(t, 1, l.live("a-1").Configs[0].Version, "updating a config does not change a placed task")
	require.Len(t, l.s.Config(id).Versions, 2, "version 1 is kept while the task uses it")

	_, err := l.do(&state.ConfigDelete{ID: id, Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Equal(t, "config train is in use by job a-1: cancel them or wait until they end (update it to change it)", err.Error())

	l.report(t0, structs.TaskSucceeded, 0, "a-1")
	l.must(putConfig("user:u1", "train", 3, structs.ConfigData{"k": []byte("3")}))
	assert.Len(t, l.s.Config(id).Versions, 1, "versions no task uses are dropped at the next update")
	l.must(&state.ConfigDelete{ID: id, Now: t0})
	assert.Nil(t, l.s.Config(id))
	_, err = l.do(&state.ConfigDelete{ID: id, Now: t0})
	assert.ErrorIs(t, err, state.ErrNotFound)
}

// service restart stops the replicas placed before it one at a time,
// each once its predecessor's replacement runs, never leaving fewer than
// minAvailable running; the replacements get the config's newest
// version. A service that cannot keep minAvailable while one replica
// restarts is refused.
func TestServiceRestartRollsOneAtATime(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	id := structs.ConfigID{Kind: structs.ConfigKindConfig, Owner: "user:u1", Name: "web"}
	l.must(putConfig("user:u1", "web", 1, structs.ConfigData{"k": []byte("1")}))
	l.must(&state.JobSubmit{Job: withConfigs(job("s-1", st.NewJob("s", "u1").Low().Service(3, 2).CPU(1, 1)),
		structs.ConfigRef{Config: "web", MountPath: "/etc/web"}), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	l.must(putConfig("user:u1", "web", 2, structs.ConfigData{"k": []byte("2")}))

	assert.Equal(t, state.RestartResult{Restart: 1}, l.must(&state.ServiceRestart{ID: "s-1", Now: t0}))
	versions := func() (stopping int, v1, v2 []int) {
		for _, tk := range l.s.TasksOf("s-1") {
			switch {
			case tk.State == structs.TaskStopping:
				stopping++
			case tk.State.HoldsResources() && tk.Configs[0].Version == 1:
				v1 = append(v1, tk.Index)
			case tk.State.HoldsResources():
				v2 = append(v2, tk.Index)
			}
		}
		return
	}
	for step := range 3 {
		stopping, v1, v2 := versions()
		require.Equal(t, 1, stopping, "step %d: one replica restarts at a time", step)
		require.Len(t, v1, 2-step)
		require.Len(t, v2, step)
		var stop structs.TaskID
		for _, tk := range l.s.TasksOf("s-1") {
			if tk.State == structs.TaskStopping {
				assert.Equal(t, structs.StopRestarted, tk.StopReason)
				stop = tk.ID
			}
		}
		l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: stop, State: structs.TaskSucceeded, Time: t0}}})
		s, _, _ := versions()
		require.Zero(t, s, "the next waits until the replacement runs")
		require.Len(t, l.recycle(t0).Placed, 1)
		s, _, _ = versions()
		require.Zero(t, s, "... not only placed")
		for _, tk := range l.s.TasksOf("s-1") {
			if tk.State == structs.TaskScheduled {
				assert.Equal(t, []structs.TaskConfig{{ConfigID: id, Version: 2}}, tk.Configs)
				l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskRunning, Time: t0}}})
			}
		}
	}
	stopping, v1, v2 := versions()
	assert.Zero(t, stopping)
	assert.Empty(t, v1)
	assert.ElementsMatch(t, []int{0, 1, 2}, v2)
	assert.Zero(t, l.s.Jobs["s-1"].ReplicaRestarts, "a restart is no crash")

	// Again, with one replica down: two run, minAvailable 2, none stops
	// until the third runs again.
	var down structs.TaskID
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.State == structs.TaskRunning && down == "" {
			down = tk.ID
		}
	}
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: down, State: structs.TaskFailed, ExitCode: 1, Time: t0}}})
	l.must(&state.ServiceRestart{ID: "s-1", Now: t0})
	stopping, _, _ = versions()
	require.Zero(t, stopping)
	l.recycle(t0.Add(time.Minute))
	l.report(t0, structs.TaskRunning, 0, "s-1")
	stopping, _, _ = versions()
	require.Equal(t, 1, stopping, "the restarted-after-failure replica is new; one of the two older ones stops")

	l.must(&state.JobSubmit{Job: job("t-1", st.NewJob("t", "u1").Low().Service(2, 2).CPU(1, 1)), Now: t0})
	_, err := l.do(&state.ServiceRestart{ID: "t-1", Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Contains(t, err.Error(), "service t-1 has 2 replica(s) and minAvailable 2: restarting one at a time would leave fewer than minAvailable running: scale it to 3 first")
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	_, err = l.do(&state.ServiceRestart{ID: "b-1", Now: t0})
	assert.ErrorIs(t, err, state.ErrInvalid)
}

// A replica that is down (crash-looping, waiting out its back-off) does
// not hold a restart up: the others restart one at a time, and it is
// placed again with the newest versions when its back-off ends.
func TestServiceRestartPassesADownReplica(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(putConfig("user:u1", "web", 1, structs.ConfigData{"k": []byte("1")}))
	l.must(&state.JobSubmit{Job: withConfigs(job("s-1", st.NewJob("s", "u1").Low().Service(3, 1).CPU(1, 1)),
		structs.ConfigRef{Config: "web", MountPath: "/etc/web"}), Now: t0})
	l.recycle(t0)
	l.report(t0, structs.TaskRunning, 0, "s-1")
	var down structs.TaskID
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.Index == 2 {
			down = tk.ID
		}
	}
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: down, State: structs.TaskFailed, ExitCode: 1, Time: t0}}})
	l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: down, State: structs.TaskFailed, ExitCode: 1, Time: t0}}})
	l.must(putConfig("user:u1", "web", 2, structs.ConfigData{"k": []byte("2")}))
	l.must(&state.ServiceRestart{ID: "s-1", Now: t0})
	for step := range 2 {
		var stop structs.TaskID
		for _, tk := range l.s.TasksOf("s-1") {
			if tk.State == structs.TaskStopping {
				require.Empty(t, stop, "step %d: one at a time", step)
				stop = tk.ID
			}
		}
		require.NotEmpty(t, stop, "step %d: a replica restarts although replica 2 is down", step)
		l.must(&state.TaskUpdate{Events: []structs.TaskEvent{{Task: stop, State: structs.TaskSucceeded, Time: t0}}})
		l.recycle(t0)
		l.report(t0, structs.TaskRunning, 0, "s-1")
	}
	for _, tk := range l.s.TasksOf("s-1") {
		if tk.State.HoldsResources() {
			assert.Equal(t, 2, tk.Configs[0].Version, "task %s", tk.ID)
		}
	}
	assert.Nil(t, l.s.Jobs["s-1"].RestartReplica, "done")
}
