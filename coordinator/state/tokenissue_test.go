package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A task's allocation token is handed out once (to its atom); unknown and
// ended tasks get none.
func TestTokenIssueOnce(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.JobSubmit{Job: job("b-1", st.NewJob("b", "u1").Low().CPU(1, 1)), Now: t0})
	l.cycle(t0)
	id := l.live("b-1").ID
	l.must(&state.TokenIssue{Task: id, Nonce: "n1"})
	assert.True(t, l.s.Tasks[id].TokenIssued)
	l.must(&state.TokenIssue{Task: id, Nonce: "n1"}) // atom's retry
	for _, n := range []string{"", "n2"} {
		_, err := l.do(&state.TokenIssue{Task: id, Nonce: n})
		require.ErrorIs(t, err, state.ErrExists)
		assert.ErrorContains(t, err, "handed out already")
	}
	var err error
	_, err = l.do(&state.TokenIssue{Task: "nosuch-0-a0"})
	require.ErrorIs(t, err, state.ErrNotFound)
	l.report(t0, structs.TaskSucceeded, 0, "b-1")
	_, err = l.do(&state.TokenIssue{Task: id})
	require.ErrorIs(t, err, state.ErrInvalid)
}
