package k8stest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
)

// Pods on the real node reach the API server as in any cluster: at the
// `kubernetes` Service, KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT
// (RealNodeAPIServiceIP:443, which the kubelet puts in every container's
// environment), with their service account's token and the cluster's CA
// (kube-root-ca.crt); the API server's certificate covers that address.
// No kube-proxy runs, so the node plays its part for that one Service:
// the Pods' network routes the service range to the host (RealNodeGateway),
// and an iptables chain of the nat table, realNodeServiceChain (removed at
// teardown with the other KUBE-* chains the node made), DNATs the
// Service's address to a forwarder in the test process on the gateway,
// which passes the bytes (TLS end to end) to the API server on loopback.

// RealNodeAPIServiceIP is the `kubernetes` Service's cluster IP: the first
// address of the service range.
const RealNodeAPIServiceIP = serviceIP

// RealNodeServiceCIDR is the cluster's service range, routed to the host
// from the Pods.
const RealNodeServiceCIDR = serviceCIDR

const realNodeServiceChain = "KUBE-ATOM-SERVICES"

// apiForwarder passes TCP connections from the Pods' network to the API
// server.
type apiForwarder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

// serveAPIServer starts the forwarder on the gateway and points the
// Service's address at it. The bridge must exist.
func (n *RealNode) serveAPIServer() error {
	u, err := url.Parse(n.c.Host)
	if err != nil {
		return fmt.Errorf("API server URL %q: %w", n.c.Host, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(RealNodeGateway, "0"))
	if err != nil {
		return fmt.Errorf("listen on the Pods' gateway for the kubernetes Service: %w", err)
	}
	f := &apiForwarder{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	n.apiFwd = f
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"-t", "nat", "-N", realNodeServiceChain},
		{"-t", "nat", "-A", realNodeServiceChain, "-d", RealNodeAPIServiceIP + "/32", "-p", "tcp", "--dport", "443",
			"-j", "DNAT", "--to-destination", RealNodeGateway + ":" + port},
		{"-t", "nat", "-I", "PREROUTING", "-i", RealNodeBridge, "-j", realNodeServiceChain},
	} {
		if out, err := run("iptables", args...); err != nil {
			return fmt.Errorf("send the kubernetes Service (%s:443) to the API server (iptables %v): %v: %s", RealNodeAPIServiceIP, args, err, out)
		}
	}
	return nil
}

func (f *apiForwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.pass(c)
	}
}

// pass copies between a Pod's connection and one to the API server until
// either side closes.
func (f *apiForwarder) pass(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	s, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer s.Close()
	if !f.track(c, s) {
		return
	}
	defer f.untrack(c, s)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(s, c)
		if tc, ok := s.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, s)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	wg.Wait()
}

func (f *apiForwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *apiForwarder) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
	}
}

// close stops accepting, cuts every connection and waits for them.
func (f *apiForwarder) close() error {
	if f == nil {
		return nil
	}
	err := f.ln.Close()
	f.mu.Lock()
	f.done = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
