package daemon

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/local"
)

// A task's output no server keeps is said to be nowhere, naming the
// servers that did not answer (they may have run it) only when some
// did not: a server that is up and has none is not "down".
func TestLogSourceSaysWhoDidNotAnswer(t *testing.T) {
	run, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(run.Close)
	up := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(up.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	f := &forwarder{peers: map[string]string{"s1": "http://self.invalid", "s2": up.URL}, logClient: http.DefaultClient}
	_, err = f.logSource(run, nil, "s1")("job-1-0-a0", false)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.EqualError(t, err, "no server keeps any: it wrote none, or its output was removed with the server that ran it: file does not exist")

	f.peers["s3"] = gone.URL
	_, err = f.logSource(run, nil, "s1")("job-1-0-a0", false)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.EqualError(t, err, "no server that answered keeps any; s3, down, may have run it: file does not exist")
}
