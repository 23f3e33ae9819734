package daemon_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/pkg/tlstest"
	"github.com/atom-sched/atom/test/testlog"
)

// A new server pointed at a follower joins: the follower passes the join
// on to the leader, as it does other writes. s2 leads (it bootstrapped),
// s1 follows; s3 joins via s1's URL, becomes a voter and gets the state.
func TestJoinViaFollower(t *testing.T) {
	ids := []string{"s1", "s2", "s3"}
	peers := map[string]string{}
	addrs := map[string]string{}
	for _, id := range ids {
		addrs[id] = freeAddr(t)
		peers[id] = "http://" + addrs[id]
	}
	var logs testlog.Buffer
	s2 := startTLS(t, "s2", addrs["s2"], peers, nil, "", &logs)
	s1 := startTLS(t, "s1", addrs["s1"], peers, nil, peers["s2"], &logs)
	nodes := func(d *daemon.Daemon) (n int) {
		d.Server.Read(func(s *stateView) { n = len(s.Nodes) })
		return n
	}
	require.Eventually(t, func() bool { return nodes(s1) == 8 }, 20*time.Second, 20*time.Millisecond, "s1 joined s2: %s", logs.String())
	require.True(t, s2.Server.IsLeader(), "s2 leads")
	require.False(t, s1.Server.IsLeader(), "s1 follows")

	s3 := startTLS(t, "s3", addrs["s3"], peers, nil, peers["s1"], &logs)
	require.Eventually(t, func() bool { return nodes(s3) == 8 }, 20*time.Second, 20*time.Millisecond, "s3 gets the state: %s", logs.String())
	members, err := s2.Server.Peers()
	require.NoError(t, err)
	var voters []string
	for _, m := range members {
		if m.Voter {
			voters = append(voters, m.ID)
		}
	}
	assert.ElementsMatch(t, []string{"s1", "s2", "s3"}, voters)
	assert.True(t, s2.Server.IsLeader(), "leadership stayed on s2")
	assert.NotContains(t, logs.String(), "join refused")
}

// A follower that does not know the leader's URL (no --peer for it) says
// so; the joining server keeps asking (it is not refused for good).
func TestJoinViaFollowerWithoutPeer(t *testing.T) {
	a1, a2 := freeAddr(t), freeAddr(t)
	var logs testlog.Buffer
	startTLS(t, "s2", a2, nil, nil, "", &logs)
	s1 := startTLS(t, "s1", a1, nil, nil, "http://"+a2, &logs)
	require.Eventually(t, func() bool {
		n := 0
		s1.Server.Read(func(s *stateView) { n = len(s.Nodes) })
		return n == 8
	}, 20*time.Second, 20*time.Millisecond, "s1 joined s2: %s", logs.String())

	var l3 testlog.Buffer
	s3 := startTLS(t, "s3", "127.0.0.1:0", nil, nil, "http://"+a1, &l3)
	require.Eventually(t, func() bool { return strings.Count(l3.String(), "join failed, retrying") >= 2 }, 20*time.Second, 20*time.Millisecond)
	assert.Contains(t, l3.String(), "not the leader: the leader is s2 at")
	assert.Contains(t, l3.String(), "this server has no --peer for s2, so it cannot pass the join on: join via the leader's URL, or give this server --peer s2=URL")
	select {
	case err := <-s3.JoinFailed():
		t.Fatalf("a transient refusal ended joining: %v", err)
	default:
	}
}

// A server that can never join (certificates of another CA, another
// secret) stops asking and says what to fix; one that cannot reach the
// cluster yet keeps asking.
func TestJoinRefusedForGood(t *testing.T) {
	ca := tlstest.NewCA(t, "atom cluster CA")
	s1Addr := freeAddr(t)
	var logs testlog.Buffer
	f1 := ca.Write(t, "s1", "127.0.0.1")
	startTLS(t, "s1", s1Addr, nil, &f1, "", &logs)
	s1 := "https://" + s1Addr

	other := tlstest.NewCA(t, "another CA").Write(t, "x1", "127.0.0.1")
	same := ca.Write(t, "x2", "127.0.0.1")
	for name, tc := range map[string]struct {
		files  tlstest.Files
		secret string
		want   string
	}{
		"another CA": {other, tlsSecret, "join " + s1 + ": its certificate is not signed by the CA in this server's --tls-ca (Post \"" + s1 +
			"/internal/v1/join\": tls: failed to verify certificate: x509: certificate signed by unknown authority): start this server with --tls-cert, --tls-key and --tls-ca: a certificate for its own address signed by the cluster's CA, and that CA"},
		"another secret": {same, "not-the-secret", "join " + s1 + ": refused (this endpoint is for coordinator servers only: the shared secret sent does not match this cluster's: give every server the same --secret (or $ATOM_CLUSTER_SECRET)): the shared secret does not match: give this server the cluster's --secret (or $ATOM_CLUSTER_SECRET)"},
	} {
		t.Run(name, func(t *testing.T) {
			var xl testlog.Buffer
			x := startJoiner(t, tc.files, tc.secret, s1, &xl)
			select {
			case err := <-x.JoinFailed():
				assert.Equal(t, tc.want, err.Error())
			case <-time.After(20 * time.Second):
				t.Fatalf("still trying to join: %s", xl.String())
			}
			assert.Equal(t, 1, strings.Count(xl.String(), "join refused"), "asked once: %s", xl.String())
			assert.NotContains(t, xl.String(), "retrying")
		})
	}

	// Nothing listens there yet: transient, asked again with backoff.
	var xl testlog.Buffer
	down := "https://" + freeAddr(t)
	x := startJoiner(t, same, tlsSecret, down, &xl)
	require.Eventually(t, func() bool { return strings.Count(xl.String(), "join failed, retrying") >= 3 }, 20*time.Second, 20*time.Millisecond)
	assert.Contains(t, xl.String(), "connection refused")
	select {
	case err := <-x.JoinFailed():
		t.Fatalf("connection refused ended joining: %v", err)
	default:
	}
}

// startJoiner starts a server with TLS files f and secret that joins join.
func startJoiner(t *testing.T, f tlstest.Files, secret, join string, log *testlog.Buffer) *daemon.Daemon {
	t.Helper()
	cfg := daemon.Config{HTTPAddr: "127.0.0.1:0", Secret: secret, Tokens: tokens(t),
		TLS:    daemon.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	cfg.Server = server.Config{ID: "x", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Join: []string{join}}
	fastRaft(&cfg.Server)
	d, err := daemon.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}
