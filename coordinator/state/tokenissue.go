package state

import (
	"fmt"

	"github.com/atom-sched/atom/pkg/structs"
)

// MsgTokenIssue is TokenIssue's log type (15 is MsgWarmUpEnd's).
const MsgTokenIssue MsgType = 16

func init() { register(MsgTokenIssue, func() Command { return &TokenIssue{} }) }

// TokenIssue records that a task Pod's atom exchanged its service-account
// token for the task's allocation token. The exchange is answered once
// per allocation: atom makes it before its job starts, so a process of the
// job that reads the Pod's token file (it can: one container) and asks
// again is refused, and the job keeps only its launch token.
type TokenIssue struct {
	Task structs.TaskID `json:"task"`
	// Nonce is the hash (SHA-256, hex) of the nonce atom sent; the same
	// hash again is a retry, answered again ("": no retry allowed).
	Nonce string `json:"nonce,omitempty"`
}

func (*TokenIssue) Type() MsgType { return MsgTokenIssue }

func (c *TokenIssue) apply(s *State) (any, error) {
	t := s.Tasks[c.Task]
	switch {
	case t == nil:
		return nil, fmt.Errorf("task %s: %w", c.Task, ErrNotFound)
	case !t.State.HoldsResources():
		return nil, invalidf("task %s has ended (%s): it gets no token", c.Task, t.State)
	case t.TokenIssued && c.Nonce != "" && c.Nonce == t.TokenNonce:
		return nil, nil // atom's retry
	case t.TokenIssued:
		return nil, existsf("task %s: its allocation token was handed out already, to its atom, which asks once before the job starts", c.Task)
	}
	s.putTask(c.Task, func(t *structs.Task) { t.TokenIssued, t.TokenNonce = true, c.Nonce })
	return nil, nil
}
