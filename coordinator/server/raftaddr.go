package server

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// raftAdvertise parses Config.RaftAdvertise. An IP:port is the address as
// it is; a name:port stays a name (nameAddr) that the other servers dial,
// resolving it each time: a server whose IP changes when it restarts (a
// Pod of a StatefulSet, known by its stable DNS name) stays reachable at
// the address the Raft configuration holds for it.
func raftAdvertise(s string) (net.Addr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("raft advertise address %q: %w: use IP:port or name:port", s, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || host == "" {
		return nil, fmt.Errorf("raft advertise address %q: use IP:port or name:port with a port from 1 to 65535", s)
	}
	if net.ParseIP(host) != nil {
		return net.ResolveTCPAddr("tcp", s)
	}
	return nameAddr(s), nil
}

// nameAddr is a Raft address by DNS name (host:port).
type nameAddr string

func (a nameAddr) Network() string { return "tcp" }
func (a nameAddr) String() string  { return string(a) }

// advertisable reports whether a is an address other servers can dial: a
// name, or a specific IP.
func advertisable(a net.Addr) bool {
	switch a := a.(type) {
	case nameAddr:
		return true
	case *net.TCPAddr:
		return a.IP != nil && !a.IP.IsUnspecified()
	}
	return false
}

// tcpStreamLayer is Raft's plain TCP stream layer for a server that
// advertises a name (raft.NewTCPTransport takes only an IP).
type tcpStreamLayer struct {
	net.Listener
	advertise net.Addr
}

// newNamedTCPTransport is raft.NewTCPTransportWithLogger advertising a
// name.
func newNamedTCPTransport(bind string, advertise nameAddr, s *Server) (*raft.NetworkTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithLogger(&tcpStreamLayer{Listener: ln, advertise: advertise}, 3, 10*time.Second,
		newHCLogger(s.log.With("component", "raft"), "raft")), nil
}

// Dial connects to a peer, resolving its name now.
func (l *tcpStreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// Addr is the advertised name.
func (l *tcpStreamLayer) Addr() net.Addr { return l.advertise }
