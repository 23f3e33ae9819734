package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/tlstest"
)

// mutualTLS is the Raft TLS config of a server named id with a
// certificate from ca for 127.0.0.1.
func mutualTLS(t *testing.T, ca *tlstest.CA, id string) *server.Config {
	pool, err := server.CertPool(ca.PEM)
	require.NoError(t, err)
	return &server.Config{TLS: server.MutualTLS(ca.KeyPair(t, id, "127.0.0.1"), pool)}
}

// Three servers with certificates from the cluster's CA form a cluster
// over TLS and commit; a server whose certificate another CA signed, or
// that speaks plain TCP, is added as a voter yet never gets any state:
// the TLS handshake refuses it both ways.
func TestRaftOverMutualTLS(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "atom cluster CA")
	c := newCluster(t, 3, func(cfg *server.Config) { cfg.TLS = mutualTLS(t, ca, cfg.ID).TLS })
	c.seed(st.C64("c1"))
	c.apply(&state.JobSubmit{RequestID: "r1", Job: cpuJob("web", 1), Now: time.Now()})
	c.converged()
	for _, s := range c.live() {
		require.NotNil(t, jobOf(s, "web-1"), "server %s has the job", s.ID())
	}

	other := tlstest.NewCA(t, "another CA")
	for name, cfg := range map[string]server.Config{
		"another CA": {ID: "x1", TLS: mutualTLS(t, other, "x1").TLS},
		"no TLS":     {ID: "x2"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.RaftAddr, cfg.DataDir, cfg.Logger = "127.0.0.1:0", t.TempDir(), testLogger(t)
			x, err := server.New(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = x.Shutdown() })

			l := c.leader()
			require.NoError(t, l.AddVoter(cfg.ID, x.RaftAddr()), "a quorum of the three commits the change")
			id := structs.JobID("after-" + cfg.ID)
			j := cpuJob("after", 1)
			j.ID, j.Name = id, "after-"+cfg.ID
			c.apply(&state.JobSubmit{RequestID: string(id), Job: j, Now: time.Now()})
			for _, s := range c.live() {
				require.Eventually(t, func() bool { return jobOf(s, id) != nil }, waitFor, tick, "server %s has the job", s.ID())
			}
			var index uint64
			x.Read(func(st *state.State) { index = st.Index })
			assert.Zero(t, index, "the outsider has applied nothing")
			assert.Nil(t, jobOf(x, "web-1"))
			peers, err := x.Peers()
			require.NoError(t, err)
			assert.Empty(t, peers, "the outsider does not even know the configuration")
		})
	}
}
