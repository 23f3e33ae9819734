package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `coordinator dev --help` describes --advertise without the TLS flags
// dev does not have; `coordinator server --help` names them.
func TestAdvertiseHelp(t *testing.T) {
	help := func(cmd string) string {
		var out bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &out
		require.NoError(t, app.Run([]string{"coordinator", cmd, "--help"}))
		return out.String()
	}
	dev := help("dev")
	assert.Contains(t, dev, "http:// URL tasks use to reach this coordinator, e.g. when --http-addr is 0.0.0.0:7070 (default: http://<http-addr>)")
	assert.NotContains(t, dev, "--tls-")
	assert.NotContains(t, dev, "https://")
	srv := help("server")
	assert.Contains(t, srv, "with TLS an https:// URL whose host --tls-cert names (default: http://<http-addr>, https://<http-addr> with --tls-cert)")
	assert.Contains(t, srv, "--tls-cert value")
}
