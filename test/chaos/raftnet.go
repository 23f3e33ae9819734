package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// raftNet carries the servers' Raft traffic over real loopback TCP through
// one proxy per server, so the suite can cut a server off (a blocked port
// on loopback) without privileges:
//
//	s2 ──dial──▶ proxy of s1 (what s1 advertises) ──▶ s1's real Raft port
//
// Every Raft connection starts with an RPC whose header names the sender,
// so the proxy of s1 knows which pair a connection joins. Cutting s1 off
// closes every connection from or to s1 and refuses new ones until it is
// healed; the servers' HTTP APIs stay reachable (cut off from the other
// coordinators, not from clients or tasks: C20's variant).
type raftNet struct {
	mu      sync.Mutex
	cut     map[string]bool       // server ID -> cut off
	conns   map[*link]struct{}    // open connections
	proxies map[string]*raftProxy // by the server they front
	stats   map[string]int        // connections refused because of a cut
	closed  bool
	wg      sync.WaitGroup
}

// raftProxy fronts one server's Raft transport.
type raftProxy struct {
	id     string // the server behind it
	ln     net.Listener
	target string // the server's real Raft address
}

// link is one proxied connection from one server to another.
type link struct {
	from, to string
	a, b     net.Conn
}

func newRaftNet() *raftNet {
	return &raftNet{cut: map[string]bool{}, conns: map[*link]struct{}{}, proxies: map[string]*raftProxy{}}
}

// front starts the proxy for server id, whose Raft transport listens on
// target; it returns the address the server must advertise.
func (n *raftNet) front(id, target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	p := &raftProxy{id: id, ln: ln, target: target}
	n.mu.Lock()
	n.proxies[id] = p
	n.mu.Unlock()
	n.wg.Add(1)
	go n.accept(p)
	return ln.Addr().String(), nil
}

func (n *raftNet) accept(p *raftProxy) {
	defer n.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go n.serve(p, c)
	}
}

// serve reads the first RPC of c to learn its sender, then joins it to the
// server behind p unless either is cut off.
func (n *raftNet) serve(p *raftProxy, c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var head bytes.Buffer
	from, err := rpcSender(io.TeeReader(c, &head))
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	if n.blocked(from, p.id) {
		c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil { // the server is down: as if the port were closed
		c.Close()
		return
	}
	l := &link{from: from, to: p.id, a: c, b: up}
	n.mu.Lock()
	if n.closed || n.cut[from] || n.cut[p.id] {
		n.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	n.conns[l] = struct{}{}
	n.mu.Unlock()
	if _, err := up.Write(head.Bytes()); err != nil {
		n.drop(l)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	n.drop(l)
}

// blocked reports whether a connection from -> to is cut.
func (n *raftNet) blocked(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[from] || n.cut[to] || n.closed
}

func (n *raftNet) drop(l *link) {
	n.mu.Lock()
	delete(n.conns, l)
	n.mu.Unlock()
	l.a.Close()
	l.b.Close()
}

// cutOff isolates server id from the other servers' Raft traffic: open
// connections are closed, new ones refused.
func (n *raftNet) cutOff(id string) {
	n.mu.Lock()
	n.cut[id] = true
	var doomed []*link
	for l := range n.conns {
		if l.from == id || l.to == id {
			doomed = append(doomed, l)
		}
	}
	n.mu.Unlock()
	for _, l := range doomed {
		n.drop(l)
	}
}

// heal ends server id's isolation.
func (n *raftNet) heal(id string) {
	n.mu.Lock()
	delete(n.cut, id)
	n.mu.Unlock()
}

// isCut reports whether id is cut off now.
func (n *raftNet) isCut(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[id]
}

// close stops every proxy and connection.
func (n *raftNet) close() {
	n.mu.Lock()
	n.closed = true
	var ls []*link
	for l := range n.conns {
		ls = append(ls, l)
	}
	var ps []*raftProxy
	for _, p := range n.proxies {
		ps = append(ps, p)
	}
	n.mu.Unlock()
	for _, p := range ps {
		p.ln.Close()
	}
	for _, l := range ls {
		n.drop(l)
	}
	n.wg.Wait()
}

// Raft's network transport frames each RPC as one type byte and a
// msgpack-encoded request (hashicorp/raft net_transport.go).
const (
	rpcAppendEntries uint8 = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
)

// rpcSender decodes the first RPC from r and returns the ID of the server
// that sent it.
func rpcSender(r io.Reader) (string, error) {
	var t [1]byte
	if _, err := io.ReadFull(r, t[:]); err != nil {
		return "", err
	}
	var req raft.WithRPCHeader
	switch t[0] {
	case rpcAppendEntries:
		req = &raft.AppendEntriesRequest{}
	case rpcRequestVote:
		req = &raft.RequestVoteRequest{}
	case rpcInstallSnapshot:
		req = &raft.InstallSnapshotRequest{}
	case rpcTimeoutNow:
		req = &raft.TimeoutNowRequest{}
	case rpcRequestPreVote:
		req = &raft.RequestPreVoteRequest{}
	default:
		return "", fmt.Errorf("unknown raft rpc type %d", t[0])
	}
	if err := codec.NewDecoder(r, &codec.MsgpackHandle{}).Decode(req); err != nil {
		return "", err
	}
	id := string(req.GetRPCHeader().ID)
	if id == "" {
		return "", errors.New("raft rpc without a sender ID")
	}
	return id, nil
}
