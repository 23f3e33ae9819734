package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// stuckBackend is a fakeBackend whose Start of one job's tasks does not
// return until release is closed, as a Kubernetes backend's Start does
// while its API server does not answer.
type stuckBackend struct {
	*fakeBackend
	job     structs.JobID
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	inStart  bool // a Start of job's task is running
	stopDone bool // a Stop of job's task returned while its Start ran
}

func (b *stuckBackend) Start(l backend.Launch) error {
	if l.Job.ID == b.job {
		b.mu.Lock()
		b.inStart = true
		b.mu.Unlock()
		<-b.release
		b.mu.Lock()
		b.inStart = false
		b.mu.Unlock()
	}
	return b.fakeBackend.Start(l)
}

func (b *stuckBackend) Stop(h backend.Halt) error {
	b.mu.Lock()
	if b.inStart {
		b.stopDone = true
	}
	b.mu.Unlock()
	return b.fakeBackend.Stop(h)
}

// free lets the stuck Start return (once; a server closing waits for it).
func (b *stuckBackend) free() { b.once.Do(func() { close(b.release) }) }

func (b *stuckBackend) starting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inStart
}

// A Start that does not return holds up nobody else's: jobs placed after
// it start while it hangs. The stuck task's Stop waits for its Start to
// return (a Pod deleted before it was created would run on).
func TestStuckStartHoldsUpNoOtherTask(t *testing.T) {
	t.Parallel()
	c, l, b := stuckStart(t)
	stuck, _ := tasksOf(l, "a-1")
	require.Len(t, stuck, 1)

	for _, name := range []string{"b", "c", "e"} {
		c.apply(&state.JobSubmit{RequestID: name, Job: cpuJob(name, 1), Now: time.Now()})
	}
	for _, id := range []structs.JobID{"b-1", "c-1", "e-1"} {
		require.Eventually(t, func() bool { return started(l, b.fakeBackend, id) }, waitFor, tick, "%s never started while a's Start hung", id)
	}
	assert.True(t, b.starting(), "a's Start returned before it was released")

	// Cancel a: its Stop is not sent while its Start runs, though a
	// cycle that saw it Stopping has run (it started d, placed after).
	c.apply(&state.JobCancel{ID: "a-1", Now: time.Now()})
	require.Eventually(t, func() bool { ts, _ := tasksOf(l, "a-1"); return ts[0].State == structs.TaskStopping }, waitFor, tick)
	c.apply(&state.JobSubmit{RequestID: "d", Job: cpuJob("d", 1), Now: time.Now()})
	require.Eventually(t, func() bool { return started(l, b.fakeBackend, "d-1") }, waitFor, tick, "d never started")
	_, _, _, stopped := b.seen(stuck[0].ID)
	assert.False(t, stopped, "a's Stop was sent while its Start ran")

	b.free()
	require.Eventually(t, func() bool { _, _, _, ok := b.seen(stuck[0].ID); return ok }, waitFor, tick, "a's Stop never sent after its Start returned")
	_, started, _, _ := b.seen(stuck[0].ID)
	assert.True(t, started)
	b.mu.Lock()
	assert.False(t, b.stopDone, "a Stop returned while the same task's Start ran")
	b.mu.Unlock()
}

// Drain returns only once the backend has returned from the Starts
// handed to it: the tasks its caller then stops are all there are.
func TestDrainWaitsForStarts(t *testing.T) {
	t.Parallel()
	_, l, b := stuckStart(t)

	drained := make(chan struct{})
	go func() { l.Drain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("Drain returned while a Start was running")
	case <-time.After(3 * server.DefaultCycle):
	}
	b.free()
	select {
	case <-drained:
	case <-time.After(waitFor):
		t.Fatal("Drain never returned after the Start did")
	}
	tasks, _ := tasksOf(l, "a-1")
	_, started, _, _ := b.seen(tasks[0].ID)
	assert.True(t, started)
}

// stuckStart starts a one-server cluster whose backend's Start of job
// a-1 hangs, submits a-1 and returns once that Start has begun.
func stuckStart(t *testing.T) (*cluster, *server.Server, *stuckBackend) {
	t.Helper()
	c := newCluster(t, 1, nil)
	b := &stuckBackend{fakeBackend: &fakeBackend{started: map[structs.TaskID]string{}, stopped: map[structs.TaskID]time.Duration{}},
		job: "a-1", release: make(chan struct{})}
	t.Cleanup(b.free)
	l := c.leader()
	l.SetBackend(b)
	c.seed(st.C64("c1"))
	c.apply(&state.JobSubmit{RequestID: "a", Job: cpuJob("a", 1), Now: time.Now()})
	require.Eventually(t, b.starting, waitFor, tick, "a's Start never began")
	return c, l, b
}

// started reports whether job id has one task and b started it.
func started(l *server.Server, b *fakeBackend, id structs.JobID) bool {
	tasks, _ := tasksOf(l, id)
	if len(tasks) != 1 {
		return false
	}
	_, ok, _, _ := b.seen(tasks[0].ID)
	return ok
}
