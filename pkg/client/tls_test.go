package client_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
)

// A certificate the CA signed but for other names is not blamed on the CA:
// the message says the address is what the certificate does not name.
func TestCertificateForOtherNames(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler()) // names 127.0.0.1, ::1, example.com
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	addr := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c := client.New(addr, "t0123456789abcdef")
	require.NoError(t, c.TrustCA(ca))

	_, err := c.ListJobs(context.Background(), client.JobFilter{})
	require.ErrorIs(t, err, client.ErrUntrustedCertificate)
	assert.Contains(t, err.Error(), "coordinator "+addr+" presented a certificate that does not name this address (tls: failed to verify certificate: x509: certificate is valid for example.com, *.example.com, not localhost): use an address its certificate names, or give the server a certificate that names this one")
	assert.NotContains(t, err.Error(), "--tls-ca")
}
