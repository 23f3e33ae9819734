// Package fsm is the coordinator's Raft state machine: it decodes typed
// commands from the log and applies them to a state.State, and snapshots
// and restores the whole state.
package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/atom-sched/atom/coordinator/state"
)

// FSM implements raft.FSM over a state.State. Apply runs on Raft's apply
// goroutine; readers use Read, which holds the read lock.
type FSM struct {
	mu sync.RWMutex // guards st
	st *state.State
	// OnApply, if set, is called after each applied command with its
	// index, command and result (under no lock). Servers use it to wake
	// waiters and the scheduling loop.
	OnApply func(index uint64, c state.Command, r Response)
}

// Response is what Apply returns through raft.ApplyFuture.Response.
type Response struct {
	Result any
	Err    error
}

// New returns an FSM over an empty state.
func New() *FSM { return &FSM{st: state.New()} }

// Apply decodes and applies one log entry. An entry of a type this server
// does not know, marked ignorable (state.MsgIgnorable), is skipped: a
// newer server wrote it during a rolling upgrade. Any other undecodable
// entry means a corrupt log or a newer server's command: it panics, as
// continuing would let servers diverge.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	c, err := state.Decode(l.Data)
	if errors.Is(err, state.ErrUnknownIgnorable) {
		f.mu.Lock()
		f.st.Skip(l.Index)
		f.mu.Unlock()
		return Response{}
	}
	if err != nil {
		panic(fmt.Sprintf("fsm: log index %d: %v", l.Index, err))
	}
	f.mu.Lock()
	res, err := f.st.Apply(l.Index, c)
	f.mu.Unlock()
	r := Response{Result: res, Err: err}
	if f.OnApply != nil {
		f.OnApply(l.Index, c, r)
	}
	return r
}

// Read calls fn with the state under the read lock. fn must not keep or
// modify what it reads, except objects it knows are copy-on-write (jobs,
// tasks, nodes, pools), which it may keep.
func (f *FSM) Read(fn func(s *state.State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.st)
}

// Snapshot captures the state: the maps are copied under the lock (the
// objects are copy-on-write and shared); Persist encodes outside it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &snapshot{st: f.st.Clone()}, nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st := state.New()
	if err := json.NewDecoder(rc).Decode(st); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

type snapshot struct{ st *state.State }

// Persist writes the state as one JSON document.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.st); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
