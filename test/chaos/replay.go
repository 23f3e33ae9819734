package chaos

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// replayed is one server's Raft log played again, offline, through the
// coordinator's own state machine (coordinator/fsm) after the server has
// stopped: the state it held at every index of its log, each checked with
// the scheduling core's invariant checker.
type replayed struct {
	server string
	// from is the snapshot index the replay started from (0: the empty
	// state at the start of the log); first..last the log entries played.
	from, first, last uint64
	commands          int // command entries applied and checked
	usageChecked      int // of them, those whose fair-share usage was recomputed
	usage             *usageCheck
	violations        int      // indexes at which the invariants failed
	examples          []string // the first few violations
	digests           map[uint64][32]byte
	terms             map[uint64]uint64
	states            map[uint64][]byte // the state, as JSON, at the indexes asked for
}

const maxExamples = 5

// replayDir replays the Raft log in dataDir. at lists indexes at which to
// keep the whole state (for comparing servers).
func replayDir(server, dataDir string, at ...uint64) (*replayed, error) {
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dataDir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second}})
	if err != nil {
		return nil, fmt.Errorf("open %s's raft log: %w", server, err)
	}
	defer store.Close()
	first, err := store.FirstIndex()
	if err != nil {
		return nil, err
	}
	last, err := store.LastIndex()
	if err != nil {
		return nil, err
	}
	r := &replayed{server: server, first: first, last: last, digests: map[uint64][32]byte{},
		terms: map[uint64]uint64{}, states: map[uint64][]byte{}}
	f := fsm.New()
	if first <= 1 {
		r.usage = newUsageCheck()
	}
	if first > 1 {
		// The log was compacted: start from the oldest snapshot that the
		// remaining log continues.
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hclog.NewNullLogger())
		if err != nil {
			return nil, err
		}
		list, err := snaps.List()
		if err != nil {
			return nil, err
		}
		var pick *raft.SnapshotMeta
		for _, m := range list {
			if m.Index+1 >= first && m.Index <= last && (pick == nil || m.Index < pick.Index) {
				pick = m
			}
		}
		if pick == nil {
			return nil, fmt.Errorf("%s: the log starts at %d and no snapshot reaches it", server, first)
		}
		_, rc, err := snaps.Open(pick.ID)
		if err != nil {
			return nil, err
		}
		if err := f.Restore(rc); err != nil {
			return nil, err
		}
		r.from, r.first = pick.Index, pick.Index+1
		r.check(f, pick.Index)
	}
	want := map[uint64]bool{}
	for _, i := range at {
		want[i] = true
	}
	for i := r.first; i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("%s: log index %d: %w", server, i, err)
		}
		h := sha256.New()
		fmt.Fprintf(h, "%d/%d/", l.Term, l.Type)
		h.Write(l.Data)
		var d [32]byte
		copy(d[:], h.Sum(nil))
		r.digests[i], r.terms[i] = d, l.Term
		if l.Type == raft.LogCommand {
			if err := apply(f, &l); err != nil {
				r.violation("index %d: %v", i, err)
			} else {
				r.commands++
				r.check(f, i)
			}
		}
		if want[i] {
			var b []byte
			f.Read(func(st *state.State) {
				b, err = json.Marshal(st)
			})
			if err != nil {
				return nil, err
			}
			r.states[i] = b
		}
	}
	return r, nil
}

// apply applies one entry, turning the FSM's panic on a corrupt entry
// into an error.
func apply(f *fsm.FSM, l *raft.Log) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("state machine panicked: %v", p)
		}
	}()
	f.Apply(l)
	return nil
}

func (r *replayed) check(f *fsm.FSM, index uint64) {
	var err error
	f.Read(func(st *state.State) {
		err = st.CheckInvariants()
		if r.usage != nil {
			err = errors.Join(err, r.usage.check(st))
			r.usageChecked++
		}
	})
	if err != nil {
		r.violation("index %d: %v", index, err)
	}
}

// usageCheck keeps the last version of every task and job a replay from
// the start of the log has seen, ended and removed ones too, so that the
// fair-share usage the state keeps command by command can be compared
// with the usage recomputed from them (sched.RecomputeUsage). A replay
// from a snapshot cannot: the state forgot the tasks that ended before.
type usageCheck struct {
	tasks map[structs.TaskID]*structs.Task
	jobs  map[structs.JobID]*structs.Job
}

func newUsageCheck() *usageCheck {
	return &usageCheck{tasks: map[structs.TaskID]*structs.Task{}, jobs: map[structs.JobID]*structs.Job{}}
}

func (u *usageCheck) check(st *state.State) error {
	maps.Copy(u.tasks, st.Tasks)
	maps.Copy(u.jobs, st.Jobs)
	got := st.FairUsage
	want := sched.RecomputeUsage(st.FairShare, got.Since, got.At, slices.Collect(maps.Values(u.tasks)),
		func(id structs.JobID) *structs.Job { return u.jobs[id] },
		func(id structs.PoolID) structs.ProjectID {
			if p := st.Pools[id]; p != nil {
				return p.Project
			}
			return ""
		})
	return sched.CheckUsage(got, want)
}

func (r *replayed) violation(format string, a ...any) {
	r.violations++
	if len(r.examples) < maxExamples {
		r.examples = append(r.examples, r.server+": "+fmt.Sprintf(format, a...))
	}
}

// compareLogs checks that the servers' logs hold the same entries at every
// index they all have, and that their states are the same at the last of
// those (given in states). It returns the differences found.
func compareLogs(rs []*replayed, common uint64) []string {
	var diffs []string
	if len(rs) == 0 {
		return nil
	}
	lo := uint64(0)
	for _, r := range rs {
		lo = max(lo, r.first)
	}
	for i := lo; i <= common; i++ {
		for _, r := range rs[1:] {
			if r.digests[i] != rs[0].digests[i] {
				diffs = append(diffs, fmt.Sprintf("log index %d differs: %s has term %d, %s term %d", i, rs[0].server, rs[0].terms[i], r.server, r.terms[i]))
				if len(diffs) >= maxExamples {
					return diffs
				}
			}
		}
	}
	for _, r := range rs[1:] {
		a, b := rs[0].states[common], r.states[common]
		if a == nil || b == nil {
			diffs = append(diffs, fmt.Sprintf("no state at index %d to compare", common))
			continue
		}
		if !bytes.Equal(a, b) {
			diffs = append(diffs, fmt.Sprintf("state at index %d differs between %s and %s", common, rs[0].server, r.server))
		}
	}
	return diffs
}

// lastIndex returns the last index of the Raft log in dataDir.
func lastIndex(dataDir string) (uint64, error) {
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dataDir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second}})
	if err != nil {
		return 0, err
	}
	defer store.Close()
	return store.LastIndex()
}
