package daemon_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/tlstest"
)

// A server refuses to start with TLS settings the other servers or tasks
// would refuse, or URLs that do not match them, and says which file or
// flag is wrong and what to do; it listens on nothing. With settings that
// fit it starts.
func TestStartRefusesBadTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "atom cluster CA")
	now := time.Now()
	good := ca.Write(t, "s1", "127.0.0.1", "s1.atom.internal")
	cert, key := ca.IssueValid(t, "old", now.Add(-48*time.Hour), now.Add(-24*time.Hour), "127.0.0.1")
	expired := ca.WritePEM(t, "old", cert, key)
	cert, key = ca.IssueValid(t, "new", now.Add(24*time.Hour), now.Add(48*time.Hour), "127.0.0.1")
	future := ca.WritePEM(t, "new", cert, key)
	otherCA := tlstest.NewCA(t, "another CA").Write(t, "x", "127.0.0.1")
	otherCA.CA = good.CA // the cluster's CA did not sign it
	notCA := good
	notCA.CA = good.Cert // a server's own certificate given as the CA

	for name, tc := range map[string]struct {
		tls       *tlstest.Files
		advertise string
		raftAdv   string
		peer      string
		join      string
		want      string // the whole error; "" starts
	}{
		"expired": {tls: &expired,
			want: `--tls-cert ` + expired.Cert + `: certificate "CN=old" expired at ` + utc(now.Add(-24*time.Hour)) + ` (valid from ` + utc(now.Add(-48*time.Hour)) + `): renew it`},
		"not valid yet": {tls: &future,
			want: `--tls-cert ` + future.Cert + `: certificate "CN=new" is not valid before ` + utc(now.Add(24*time.Hour)) + ` (now is `},
		"signed by another CA": {tls: &otherCA,
			want: `--tls-cert ` + otherCA.Cert + `: certificate "CN=x" (issuer "CN=another CA") is not signed by the CA in --tls-ca ` + good.CA + ` (x509: certificate signed by unknown authority): give a certificate that CA signed, or the CA that signed this one`},
		"CA file is not a CA": {tls: &notCA,
			want: `--tls-ca ` + good.Cert + `: certificate "CN=s1" is not a CA certificate (it lacks basicConstraints CA:TRUE): give the certificate of the CA that signed the servers' certificates, not a server's own`},
		"advertise host not named": {tls: &good, advertise: "https://10.9.9.9:7070",
			want: `--tls-cert ` + good.Cert + `: certificate "CN=s1" names 127.0.0.1, s1.atom.internal, not 10.9.9.9, the host of --advertise https://10.9.9.9:7070: the other servers and tasks would refuse it: reissue it for 10.9.9.9, or set --advertise to a host it names`},
		"raft-advertise name not named": {tls: &good, raftAdv: "s1.atom.other:7000",
			want: `--tls-cert ` + good.Cert + `: certificate "CN=s1" names 127.0.0.1, s1.atom.internal, not s1.atom.other, the host of --raft-advertise s1.atom.other:7000: the other servers and tasks would refuse it: reissue it for s1.atom.other, or set --raft-advertise to a host it names`},
		"http advertise with TLS": {tls: &good, advertise: "http://127.0.0.1:7070",
			want: `--advertise http://127.0.0.1:7070: with --tls-cert this server serves HTTPS and talks HTTPS to the others: use https://127.0.0.1:7070`},
		"http peer with TLS": {tls: &good, peer: "http://127.0.0.1:7072",
			want: `--peer s2=http://127.0.0.1:7072: with --tls-cert this server serves HTTPS and talks HTTPS to the others: use https://127.0.0.1:7072`},
		"https advertise without TLS": {advertise: "https://127.0.0.1:7070",
			want: `--advertise https://127.0.0.1:7070: this server runs without TLS, so it can neither serve HTTPS nor verify a server that does: use http://127.0.0.1:7070, or start it with --tls-cert, --tls-key and --tls-ca of the cluster's CA`},
		"https join without TLS": {join: "https://127.0.0.1:7071",
			want: `--join https://127.0.0.1:7071: this server runs without TLS, so it can neither serve HTTPS nor verify a server that does: use http://127.0.0.1:7071, or start it with --tls-cert, --tls-key and --tls-ca of the cluster's CA`},
		"advertise not a URL": {advertise: "127.0.0.1:7070",
			want: `--advertise 127.0.0.1:7070: use an http:// or https:// URL with a host, e.g. https://10.0.0.1:7070`},
		"good": {tls: &good, advertise: "https://s1.atom.internal:7070", raftAdv: "127.0.0.1:7000", peer: "https://127.0.0.1:7072"},
	} {
		t.Run(name, func(t *testing.T) {
			addr := freeAddr(t)
			cfg := daemon.Config{HTTPAddr: addr, Advertise: tc.advertise, Secret: tlsSecret, Tokens: tokens(t), Logger: quiet()}
			if tc.tls != nil {
				cfg.TLS = daemon.TLSFiles{Cert: tc.tls.Cert, Key: tc.tls.Key, CA: tc.tls.CA}
			}
			if tc.peer != "" {
				cfg.Peers = map[string]string{"s2": tc.peer}
			}
			cfg.Server = server.Config{ID: "s1", RaftAddr: "127.0.0.1:0", RaftAdvertise: tc.raftAdv, DataDir: t.TempDir(), Bootstrap: tc.join == ""}
			if tc.join != "" {
				cfg.Server.Join = []string{tc.join}
			}
			fastRaft(&cfg.Server)
			d, err := daemon.Start(cfg)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.advertise, d.URL)
				require.NoError(t, d.Close())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			ln, err := net.Listen("tcp", addr)
			require.NoError(t, err, "the refused server listens on nothing")
			ln.Close()
		})
	}
}

func utc(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
