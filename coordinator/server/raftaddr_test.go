package server_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestRaftAdvertiseName: servers that advertise their Raft address by name
// (as a StatefulSet's Pods do, whose IPs change when they restart) are
// known by that name in the configuration and reach each other through it:
// the cluster replicates, elects a new leader when the old one stops, and
// takes the old one back when it restarts.
func TestRaftAdvertiseName(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, func(cfg *server.Config) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		cfg.RaftAddr = fmt.Sprintf("127.0.0.1:%d", port)
		cfg.RaftAdvertise = fmt.Sprintf("localhost:%d", port)
	})
	l := c.leader()
	peers, err := l.Peers()
	require.NoError(t, err)
	require.Len(t, peers, 3)
	for _, p := range peers {
		assert.True(t, strings.HasPrefix(p.RaftAddr, "localhost:"), "peer %s at %s", p.ID, p.RaftAddr)
	}
	c.apply(&state.NodeUpsert{Node: &structs.Node{Name: "n1", State: structs.NodeReady}})
	c.converged()

	old := c.index(l)
	c.stop(old)
	c.apply(&state.NodeUpsert{Node: &structs.Node{Name: "n2", State: structs.NodeReady}})
	c.restart(old)
	c.converged()
}

func TestRaftAdvertiseRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ adv, msg string }{
		{"no-port", `raft advertise address "no-port": address no-port: missing port in address: use IP:port or name:port`},
		{"localhost:0", `raft advertise address "localhost:0": use IP:port or name:port with a port from 1 to 65535`},
		{"localhost:http", `raft advertise address "localhost:http": use IP:port or name:port with a port from 1 to 65535`},
		{":7000", `raft advertise address ":7000": use IP:port or name:port with a port from 1 to 65535`},
	} {
		_, err := server.New(server.Config{ID: "x", RaftAddr: "127.0.0.1:0", RaftAdvertise: tc.adv, DataDir: t.TempDir()})
		require.Error(t, err, tc.adv)
		assert.Equal(t, tc.msg, err.Error())
	}
}
