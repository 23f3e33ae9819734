package state

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MsgType identifies a command in the Raft log. Values are append-only:
// never renumber or reuse one. A type with MsgIgnorable set may be skipped
// by servers that do not know it (coordinator/README.md says which
// commands may carry it); any other unknown type stops a server.
type MsgType uint8

// MsgIgnorable is the high bit of a command type: a server that does not
// know the type skips the entry instead of stopping (as Nomad's and
// Consul's IgnoreUnknownTypeFlag). Only a command whose effect servers of
// an older version may lack without deciding anything differently may
// carry it: state they do not read, kept for people (as a record for
// display) or rebuilt from other state.
const MsgIgnorable MsgType = 0x80

// ErrUnknownIgnorable: Decode met a command type it does not know, with
// MsgIgnorable set: the entry is to be skipped.
var ErrUnknownIgnorable = errors.New("unknown ignorable command type")

const (
	MsgNodeUpsert    MsgType = 1
	MsgNodeRemove    MsgType = 2
	MsgPoolUpsert    MsgType = 3
	MsgPoolRemove    MsgType = 4
	MsgQuotaSet      MsgType = 5
	MsgClusterUpsert MsgType = 6
	MsgJobSubmit     MsgType = 7
	MsgJobCancel     MsgType = 8
	MsgServiceScale  MsgType = 9
	MsgPlanCommit    MsgType = 10
	MsgTaskUpdate    MsgType = 11
	MsgJobsExpire    MsgType = 12
	MsgNodeRelease   MsgType = 13
	MsgExecutorAdd   MsgType = 14
)

// Command is one deterministic change to the state.
type Command interface {
	Type() MsgType
	// apply changes s or returns an error and changes nothing.
	apply(s *State) (any, error)
}

// Errors commands return; the API maps them to status codes.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrInvalid  = errors.New("invalid")
)

// invalidError is a refused command: its message says what was wrong and
// what is allowed; it matches ErrInvalid without saying "invalid".
type invalidError struct{ err error }

func (e *invalidError) Error() string   { return e.err.Error() }
func (e *invalidError) Unwrap() []error { return []error{e.err, ErrInvalid} }

func invalidf(format string, a ...any) error { return &invalidError{fmt.Errorf(format, a...)} }

// existsError is a command refused because what it makes is there: its
// message says what and what to do; it matches ErrExists without
// appending ": already exists" to a message that said so already.
type existsError struct{ err error }

func (e *existsError) Error() string   { return e.err.Error() }
func (e *existsError) Unwrap() []error { return []error{e.err, ErrExists} }

func existsf(format string, a ...any) error { return &existsError{fmt.Errorf(format, a...)} }

// decoders builds an empty command of each type for decoding.
var decoders = map[MsgType]func() Command{}

// register adds a command type; duplicates are a programming error.
func register(t MsgType, f func() Command) {
	if _, dup := decoders[t]; dup {
		panic(fmt.Sprintf("state: command type %d registered twice", t))
	}
	decoders[t] = f
}

func init() {
	register(MsgNodeUpsert, func() Command { return &NodeUpsert{} })
	register(MsgNodeRemove, func() Command { return &NodeRemove{} })
	register(MsgPoolUpsert, func() Command { return &PoolUpsert{} })
	register(MsgPoolRemove, func() Command { return &PoolRemove{} })
	register(MsgQuotaSet, func() Command { return &QuotaSet{} })
	register(MsgClusterUpsert, func() Command { return &ClusterUpsert{} })
	register(MsgJobSubmit, func() Command { return &JobSubmit{} })
	register(MsgJobCancel, func() Command { return &JobCancel{} })
	register(MsgServiceScale, func() Command { return &ServiceScale{} })
	register(MsgPlanCommit, func() Command { return &PlanCommit{} })
	register(MsgTaskUpdate, func() Command { return &TaskUpdate{} })
	register(MsgJobsExpire, func() Command { return &JobsExpire{} })
	register(MsgNodeRelease, func() Command { return &NodeRelease{} })
	register(MsgExecutorAdd, func() Command { return &ExecutorAdd{} })
}

// Encode serialises c as its type byte followed by its JSON body.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode command %d: %w", c.Type(), err)
	}
	return append([]byte{byte(c.Type())}, body...), nil
}

// Decode parses what Encode wrote. An unknown type or a bad body means a
// corrupt log or a newer server's command; an unknown type with
// MsgIgnorable set is a newer server's command this one may skip
// (ErrUnknownIgnorable).
func Decode(b []byte) (Command, error) {
	if len(b) == 0 {
		return nil, errors.New("decode command: empty entry")
	}
	f, ok := decoders[MsgType(b[0])]
	if !ok {
		if MsgType(b[0])&MsgIgnorable != 0 {
			return nil, fmt.Errorf("decode command: type %d: %w", b[0], ErrUnknownIgnorable)
		}
		return nil, fmt.Errorf("decode command: unknown type %d", b[0])
	}
	c := f()
	if err := json.Unmarshal(b[1:], c); err != nil {
		return nil, fmt.Errorf("decode command %d: %w", b[0], err)
	}
	return c, nil
}

// Skip records that the entry at index was skipped: a newer server's
// ignorable command (ErrUnknownIgnorable).
func (s *State) Skip(index uint64) {
	if index > s.Index {
		s.Index = index
	}
}

// Apply applies c at log index. It returns the command's result or its
// domain error; on error the state is unchanged except for Index.
func (s *State) Apply(index uint64, c Command) (any, error) {
	if index > s.Index {
		s.Index = index
	}
	if s.byJob == nil {
		s.reindex()
	}
	return c.apply(s)
}
