package daemon_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/cli"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/tlstest"
	"github.com/atom-sched/atom/test/testlog"
)

const tlsSecret = "cluster-secret"

// startTLS starts server id with TLS files f (none: plain HTTP and TCP),
// bootstrapping or joining join, logging to log.
func startTLS(t *testing.T, id, httpAddr string, peers map[string]string, f *tlstest.Files, join string, log *testlog.Buffer) *daemon.Daemon {
	t.Helper()
	cfg := daemon.Config{HTTPAddr: httpAddr, Peers: peers, Secret: tlsSecret, Tokens: tokens(t),
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if f != nil {
		cfg.TLS = daemon.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}
	}
	cfg.Server = server.Config{ID: id, RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: join == ""}
	if join == "" {
		var err error
		cfg.Cluster, err = daemon.DevCluster()
		require.NoError(t, err)
	} else {
		cfg.Server.Join = []string{join}
	}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Three servers with certificates from the cluster's CA form a cluster
// over HTTPS and mutual-TLS Raft, and a job submitted to a follower is
// forwarded to the leader and committed everywhere. A server whose
// certificate another CA signed, and one without TLS, ask to join and are
// refused; they never get any state. The CLI reaches the cluster with
// --tls-ca and, without it, fails at once with a certificate error.
func TestTLSCluster(t *testing.T) {
	ca := tlstest.NewCA(t, "atom cluster CA")
	ids := []string{"s1", "s2", "s3"}
	addrs, peers := map[string]string{}, map[string]string{}
	for _, id := range ids {
		addrs[id] = freeAddr(t)
		peers[id] = "https://" + addrs[id]
	}
	var logs testlog.Buffer
	ds := map[string]*daemon.Daemon{}
	var caFile string
	for i, id := range ids {
		f := ca.Write(t, id, "127.0.0.1")
		caFile = f.CA
		join := ""
		if i > 0 {
			join = peers["s1"]
		}
		ds[id] = startTLS(t, id, addrs[id], peers, &f, join, &logs)
		assert.Equal(t, peers[id], ds[id].URL)
	}
	require.Eventually(t, func() bool {
		n := 0
		for _, d := range ds {
			d.Server.Read(func(s *stateView) { n += len(s.Nodes) })
		}
		return n == 3*8
	}, 20*time.Second, 50*time.Millisecond, "every server has the cluster config: %s", logs.String())

	var follower *daemon.Daemon
	for _, d := range ds {
		if !d.Server.IsLeader() {
			follower = d
			break
		}
	}
	require.NotNil(t, follower)
	c := client.New(follower.URL, adminToken)
	require.NoError(t, c.TrustCA(caFile))
	ctx := context.Background()
	r, err := c.SubmitJob(ctx, []byte("kind: command\nname: wait\ncommand: [sleep, '1000']\nresources: {accelerators: {type: A100, count: 8}}\nselector: rack=none\n"), "req-tls")
	require.NoError(t, err, "a follower forwards the write to the leader over HTTPS")
	for _, d := range ds {
		require.Eventually(t, func() bool {
			found := false
			d.Server.Read(func(s *stateView) { found = s.Jobs[r.JobID] != nil })
			return found
		}, 10*time.Second, 20*time.Millisecond)
	}

	// Outsiders ask to join and are refused.
	other := tlstest.NewCA(t, "another CA").Write(t, "x1", "127.0.0.1")
	outsiders := map[string]struct {
		files *tlstest.Files
		join  string
		why   string // in the error that ends its joining
	}{
		"x1": {&other, peers["s1"], "x509: certificate signed by unknown authority): start this server with --tls-cert, --tls-key and --tls-ca"},
		"x2": {nil, "http://" + addrs["s1"], "join http://" + addrs["s1"] + ": it serves HTTPS: join it with an https:// URL and start this server with --tls-cert, --tls-key and --tls-ca"},
	}
	for id, o := range outsiders {
		var ol testlog.Buffer
		peers := map[string]string{"s1": peers["s1"]}
		if o.files == nil {
			peers = nil
		}
		x := startTLS(t, id, "127.0.0.1:0", peers, o.files, o.join, &ol)
		select {
		case err := <-x.JoinFailed(): // refused for good: not asked again
			assert.Contains(t, err.Error(), o.why, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still tries to join: %s", id, ol.String())
		}
		var nodes, jobs int
		var index uint64
		x.Server.Read(func(s *stateView) { nodes, jobs, index = len(s.Nodes), len(s.Jobs), s.Index })
		assert.Zero(t, nodes+jobs, "%s got no state", id)
		assert.Zero(t, index, "%s applied nothing", id)
	}
	for _, d := range ds {
		peers, err := d.Server.Peers()
		require.NoError(t, err)
		assert.Len(t, peers, 3, "no outsider in the configuration")
	}

	// The join endpoint itself wants a certificate from the cluster's CA,
	// besides the secret.
	pool, err := server.CertPool(ca.PEM)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		certs  []tls.Certificate
		secret string
		want   string
	}{
		"no client certificate":           {nil, tlsSecret, "401 Unauthorized"},
		"another CA's client certificate": {[]tls.Certificate{tlstest.NewCA(t, "third CA").KeyPair(t, "x3", "127.0.0.1")}, tlsSecret, "remote error: tls: "},
		"the CA's certificate, another secret": {[]tls.Certificate{ca.KeyPair(t, "x3", "127.0.0.1")}, "not-the-secret",
			`401 Unauthorized {"error":"this endpoint is for coordinator servers only: the shared secret sent does not match this cluster's: give every server the same --secret (or $ATOM_CLUSTER_SECRET)"}`},
	} {
		cfg := &tls.Config{RootCAs: pool}
		if len(tc.certs) > 0 { // sent even though the server asks for its CA's
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc.certs[0], nil }
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, peers["s1"]+"/internal/v1/join", strings.NewReader(`{"ID": "x3", "RaftAddr": "127.0.0.1:1"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tc.secret)
		resp, err := hc.Do(req)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			body, _ := io.ReadAll(resp.Body)
			got = resp.Status + " " + strings.TrimSpace(string(body))
			resp.Body.Close()
		}
		assert.Contains(t, got, tc.want, name)
	}

	// The CLI: with --tls-ca it works; without it, a clear error at once.
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		app := cli.App()
		app.Writer, app.ErrWriter = &out, &out
		err := app.Run(append([]string{"coordinator", "--addr", peers["s2"], "--token", adminToken}, args...))
		return out.String(), err
	}
	out, err := run("--tls-ca", caFile, "job", "list")
	require.NoError(t, err)
	assert.Contains(t, out, string(r.JobID))
	t.Setenv(cli.EnvTLSCA, "")
	start := time.Now()
	_, err = run("job", "list")
	require.Error(t, err)
	assert.True(t, errors.Is(err, client.ErrUntrustedCertificate), "%v", err)
	assert.Contains(t, err.Error(), "coordinator "+peers["s2"]+" presented a certificate this client cannot verify (tls: failed to verify certificate: x509: certificate signed by unknown authority): give the CA that signed it with --tls-ca or $ATOM_TLS_CA")
	assert.Less(t, time.Since(start), 3*time.Second, "not retried")
	_, err = run("--tls-ca", other.CA, "job", "list")
	assert.ErrorIs(t, err, client.ErrUntrustedCertificate, "another CA does not do either")
	_, err = run("--addr", "http://"+addrs["s2"], "job", "list")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "coordinator http://"+addrs["s2"]+" serves HTTPS: use an https:// address (and --tls-ca or $ATOM_TLS_CA for its CA)")
}
