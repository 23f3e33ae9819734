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
// API's words for a request the user never wrote). A file of nothing but
// comments is as empty as one of 0 bytes and says the same, naming the
// file (it was the server's "job spec is empty", which named none).
func TestEmptySpecFileSaysSo(t *testing.T) {
	e := apitest.NewEnv(t, "")
	before := e.Store.StateJSON(t)
	for name, content := range map[string]string{
		"0 bytes":    "",
		"whitespace": " \n",
		"comments":   "# train.yaml: written later\n\n  # kind: command\n",
	} {
		empty := file(t, content)
		for _, tc := range []struct{ cmd, spec string }{
			{"job submit", "a job spec"}, {"quota set", "a quota spec"}, {"pool set", "a pool spec"},
			{"node set", "a node spec"}, {"cluster set", "a cluster spec"},
		} {
			_, err := run(t, e, "admin", append(strings.Fields(tc.cmd), "-f", empty)...)
			require.EqualError(t, err, "spec file "+empty+" is empty (only comments or whitespace): give "+tc.spec+" in YAML or JSON", "%s, %s", name, tc.cmd)
		}
	}
	for _, stdin := range []string{"", "# nothing yet\n"} {
		var out bytes.Buffer
		app := App()
		app.Reader, app.Writer, app.ErrWriter = strings.NewReader(stdin), &out, &out
		err := app.RunContext(context.Background(), []string{"coordinator", "--addr", e.URL(), "--token", e.Tokens["u1"], "job", "submit", "-f", "-"})
		require.EqualError(t, err, "the spec on standard input is empty (only comments or whitespace): give a job spec in YAML or JSON", "%q", stdin)
	}
	assert.Equal(t, before, e.Store.StateJSON(t), "nothing changed")
}
