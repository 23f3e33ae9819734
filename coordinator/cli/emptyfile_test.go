package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
)

// An empty spec file is refused before any request, saying the file is
// empty and what to write in it (it was "request body is empty", the
// API's words for a request the user never wrote).
func TestEmptySpecFileSaysSo(t *testing.T) {
	e := apitest.NewEnv(t, "")
	before := e.Store.StateJSON(t)
	empty := file(t, " \n")
	for _, tc := range []struct{ cmd, spec string }{
		{"job submit", "a job spec"}, {"quota set", "a quota spec"}, {"pool set", "a pool spec"},
		{"node set", "a node spec"}, {"cluster set", "a cluster spec"},
	} {
		_, err := run(t, e, "admin", append(strings.Fields(tc.cmd), "-f", empty)...)
		require.EqualError(t, err, "spec file "+empty+" is empty: give "+tc.spec+" in YAML or JSON", tc.cmd)
	}
	var out bytes.Buffer
	app := App()
	app.Reader, app.Writer, app.ErrWriter = strings.NewReader(""), &out, &out
	err := app.RunContext(context.Background(), []string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "job", "submit", "-f", "-"})
	require.EqualError(t, err, "the spec on standard input is empty: give a job spec in YAML or JSON")
	assert.Equal(t, before, e.Store.StateJSON(t), "nothing changed")
}
