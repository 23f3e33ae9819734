package deploy_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/test/testnet"
)

// TestTLSScript: deploy/tls.sh makes a CA and one certificate that names
// every address coordinator.yaml's servers and clients use, good for
// serving and as a client; real servers started with those files (as the
// StatefulSet starts them, by name: localhost here) form a cluster over
// HTTPS and mutual-TLS Raft and take a job through a follower from a
// client that trusts ca.crt. A second run into the same directory refuses
// to replace the CA.
func TestTLSScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	out, err := exec.Command("sh", filepath.Join(deployDir(t), "tls.sh"), dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "kubectl -n atom create secret generic atom-coordinator-tls --from-file="+dir+"/tls.crt")
	for _, f := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	key, err := os.Stat(filepath.Join(dir, "tls.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), key.Mode().Perm())

	raw, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	require.NoError(t, err)
	b, _ := pem.Decode(raw)
	require.NotNil(t, b)
	cert, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	pool, err := server.CertPool(caPEM)
	require.NoError(t, err)
	for _, name := range []string{
		"atom-coordinator-0.atom-coordinator-peers.atom.svc.cluster.local", "atom-coordinator-2.atom-coordinator-peers.atom.svc",
		"atom-coordinator", "atom-coordinator.atom", "atom-coordinator.atom.svc", "atom-coordinator.atom.svc.cluster.local", "localhost", "127.0.0.1",
	} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			_, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{use}})
			assert.NoError(t, err, "%s, usage %d", name, use)
		}
	}
	_, err = cert.Verify(x509.VerifyOptions{DNSName: "atom-coordinator.other.svc", Roots: pool})
	assert.Error(t, err, "names only the namespace it was made for")

	// Real servers with these files.
	toks, err := api.ParseTokens([]byte("users:\n  - {name: dev, token: ops-token-0123456789, admin: true}\n"))
	require.NoError(t, err)
	files := daemon.TLSFiles{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt")}
	ids := []string{"s1", "s2"}
	ports, peers := map[string]string{}, map[string]string{}
	port := func() string {
		addr, err := testnet.FreePort()
		require.NoError(t, err)
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		return p
	}
	for _, id := range ids {
		ports[id] = port()
		peers[id] = "https://localhost:" + ports[id]
	}
	var ds []*daemon.Daemon
	for i, id := range ids {
		raft := port()
		cfg := daemon.Config{HTTPAddr: "127.0.0.1:" + ports[id], Peers: peers, Secret: "cluster-secret", Tokens: toks, TLS: files,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		cfg.Server = server.Config{ID: id, RaftAddr: "127.0.0.1:" + raft, RaftAdvertise: "localhost:" + raft, DataDir: t.TempDir(),
			Bootstrap: i == 0, HeartbeatTTL: 3 * time.Second, Cycle: 50 * time.Millisecond}
		if i > 0 {
			cfg.Server.Join = []string{peers["s1"]}
		} else {
			var err error
			cfg.Cluster, err = daemon.DevCluster()
			require.NoError(t, err)
		}
		d, err := daemon.Start(cfg)
		require.NoError(t, err, "server %s", id)
		t.Cleanup(func() { _ = d.Close() })
		ds = append(ds, d)
	}
	require.Eventually(t, func() bool {
		n := 0
		for _, d := range ds {
			d.Server.Read(func(s *state.State) { n += len(s.Nodes) })
		}
		leader, _ := ds[1].Server.Leader()
		return n > 0 && leader != ""
	}, 20*time.Second, 50*time.Millisecond, "the second server joined over mutual TLS and has the state")
	c := client.New(peers["s2"], "ops-token-0123456789")
	require.NoError(t, c.TrustCA(files.CA))
	r, err := c.SubmitJob(context.Background(), []byte("kind: command\nname: tls\ncommand: [sleep, '1000']\nresources: {cpu: 1}\nselector: rack=none\n"), "req-tls")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		found := true
		for _, d := range ds {
			d.Server.Read(func(s *state.State) { found = found && s.Jobs[r.JobID] != nil })
		}
		return found
	}, 10*time.Second, 20*time.Millisecond)

	out, err = exec.Command("sh", filepath.Join(deployDir(t), "tls.sh"), dir).CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, "deploy/tls.sh: "+dir+"/ca.key exists: refusing to replace a CA (use another DIR)\n", string(out))
	assert.True(t, strings.HasPrefix(string(caPEM), "-----BEGIN CERTIFICATE-----"))
	after, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, caPEM, after, "the CA is untouched")
}
