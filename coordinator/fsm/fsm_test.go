package fsm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// makeLog encodes commands as Raft log entries from index 1 on.
func makeLog(t *testing.T, cmds ...state.Command) []*raft.Log {
	t.Helper()
	var out []*raft.Log
	for i, c := range cmds {
		b, err := state.Encode(c)
		require.NoError(t, err)
		out = append(out, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: b})
	}
	return out
}

// cluster is two GPU nodes, a quota for u1 and two of u1's jobs.
func cluster(t *testing.T) []*raft.Log {
	return makeLog(t,
		&state.NodeUpsert{Node: st.G8("n1", "A")},
		&state.NodeUpsert{Node: st.G8("n2", "A")},
		&state.QuotaSet{Quota: &structs.Quota{Scope: "user:u1", Limits: structs.ResourceList{"gpu/A": 16}}},
		&state.JobSubmit{Job: st.NewJob("j1", "u1").GPU("A", 8).Obj(), Now: t0},
		&state.JobSubmit{Job: st.NewJob("j2", "u1").MPI(2).GPU("A", 4).Obj(), Now: t0.Add(time.Second)},
	)
}

func applyAll(t *testing.T, f *fsm.FSM, log []*raft.Log) []fsm.Response {
	t.Helper()
	var out []fsm.Response
	for _, l := range log {
		r, ok := f.Apply(l).(fsm.Response)
		require.True(t, ok, "entry %d", l.Index)
		out = append(out, r)
	}
	return out
}

// encoded is the state of f as a snapshot persists it.
func encoded(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	var b []byte
	f.Read(func(s *state.State) {
		var err error
		b, err = json.Marshal(s)
		require.NoError(t, err)
	})
	return b
}

// Commands apply in order, each at its log index, and OnApply sees them.
func TestApplyCommands(t *testing.T) {
	f := fsm.New()
	var seen []uint64
	f.OnApply = func(index uint64, c state.Command, r fsm.Response) {
		seen = append(seen, index)
		assert.NoError(t, r.Err, "%T", c)
	}
	rs := applyAll(t, f, cluster(t))
	assert.Equal(t, state.SubmitResult{JobID: "j2"}, rs[4].Result)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5}, seen)
	f.Read(func(s *state.State) {
		assert.Equal(t, uint64(5), s.Index)
		require.Len(t, s.Jobs, 2)
		assert.Equal(t, structs.JobPending, s.Jobs["j1"].State)
		assert.Equal(t, structs.ResourceList{"gpu/A": 16}, s.Usage["user:u1"])
		assert.NoError(t, s.CheckInvariants())
	})
}

// A refused command is its response's error and changes nothing but the
// applied index.
func TestApplyRefusedChangesNothing(t *testing.T) {
	f := fsm.New()
	applyAll(t, f, cluster(t))
	before := encoded(t, f)
	b, err := state.Encode(&state.JobSubmit{Job: st.NewJob("big", "u1").GPU("A", 9).Obj(), Now: t0})
	require.NoError(t, err)
	r := f.Apply(&raft.Log{Index: 6, Type: raft.LogCommand, Data: b}).(fsm.Response)
	require.ErrorIs(t, r.Err, sched.ErrUnsatisfiable)
	f.Read(func(s *state.State) {
		assert.Equal(t, uint64(6), s.Index)
		s.Index = 5
	})
	assert.JSONEq(t, string(before), string(encoded(t, f)))
}

// Entries that are not commands (no-ops, barriers, configuration) leave
// the state alone.
func TestApplyIgnoresOtherEntries(t *testing.T) {
	f := fsm.New()
	applyAll(t, f, cluster(t))
	before := encoded(t, f)
	for _, typ := range []raft.LogType{raft.LogNoop, raft.LogBarrier, raft.LogConfiguration} {
		assert.Nil(t, f.Apply(&raft.Log{Index: 9, Type: typ}))
	}
	assert.Equal(t, before, encoded(t, f))
}

// An entry of a type this server does not know stops it, unless the type
// is marked ignorable: then a newer server wrote it during a rolling
// upgrade, and it is skipped.
func TestApplyUnknownTypes(t *testing.T) {
	f := fsm.New()
	applyAll(t, f, cluster(t))
	before := encoded(t, f)
	called := false
	f.OnApply = func(uint64, state.Command, fsm.Response) { called = true }

	unknown := byte(0x7f)
	assert.PanicsWithValue(t, "fsm: log index 6: decode command: unknown type 127", func() {
		f.Apply(&raft.Log{Index: 6, Type: raft.LogCommand, Data: []byte{unknown, '{', '}'}})
	})

	ignorable := byte(state.MsgIgnorable) | unknown
	assert.Equal(t, fsm.Response{}, f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte{ignorable, '{', '}'}}))
	assert.False(t, called, "nothing applied")
	f.Read(func(s *state.State) {
		assert.Equal(t, uint64(7), s.Index)
		s.Index = 5
	})
	assert.JSONEq(t, string(before), string(encoded(t, f)))

	// Commands after it apply as usual.
	b, err := state.Encode(&state.JobCancel{ID: "j1", Now: t0})
	require.NoError(t, err)
	r := f.Apply(&raft.Log{Index: 8, Type: raft.LogCommand, Data: b}).(fsm.Response)
	require.NoError(t, r.Err)
	assert.True(t, called)
}

// A snapshot restored into a fresh state machine is the same state, and
// the rest of the log applied to it ends where a machine that applied the
// whole log ends: byte for byte.
func TestSnapshotRestoreSameLogSameState(t *testing.T) {
	log := append(cluster(t), makeLog(t,
		&state.NodeUpsert{Node: st.G8("n3", "A")},
		&state.JobCancel{ID: "j1", Now: t0.Add(time.Minute)},
	)...)
	for i, l := range log {
		l.Index = uint64(i + 1)
	}
	whole := fsm.New()
	applyAll(t, whole, log)

	half := fsm.New()
	applyAll(t, half, log[:4])
	store := raft.NewInmemSnapshotStore()
	snap, err := half.Snapshot()
	require.NoError(t, err)
	sink, err := store.Create(raft.SnapshotVersionMax, 4, 1, raft.Configuration{}, 0, nil)
	require.NoError(t, err)
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	applyAll(t, half, log[4:5]) // a command after the snapshot: not in it

	restored := fsm.New()
	metas, err := store.List()
	require.NoError(t, err)
	require.Len(t, metas, 1)
	_, rc, err := store.Open(metas[0].ID)
	require.NoError(t, err)
	require.NoError(t, restored.Restore(rc))
	restored.Read(func(s *state.State) { assert.Equal(t, uint64(4), s.Index) })
	applyAll(t, restored, log[4:])

	assert.Equal(t, persisted(t, whole), persisted(t, restored))
}

// persisted is what a snapshot of f writes.
func persisted(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, snap.Persist(&bufSink{Buffer: &b}))
	return b.Bytes()
}

// bufSink is a raft.SnapshotSink into a buffer.
type bufSink struct{ *bytes.Buffer }

func (*bufSink) ID() string    { return "buf" }
func (*bufSink) Cancel() error { return nil }
func (*bufSink) Close() error  { return nil }

var _ io.WriteCloser = (*bufSink)(nil)

// A snapshot that does not decode is refused; the state stays.
func TestRestoreBadSnapshot(t *testing.T) {
	f := fsm.New()
	applyAll(t, f, cluster(t))
	before := encoded(t, f)
	err := f.Restore(io.NopCloser(bytes.NewReader([]byte("{not json"))))
	require.ErrorContains(t, err, "restore snapshot")
	assert.Equal(t, before, encoded(t, f))
}
