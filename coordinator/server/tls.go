package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TLS between servers. With Config.TLS set, the Raft transport runs over
// TLS with mutual authentication: a server accepts a Raft connection only
// from a peer whose certificate the CA signed, and dials a peer only if
// the peer's certificate, signed by the same CA, names the address it
// dials (an IP SAN for an IP address, a DNS SAN for a name). A server with
// a certificate from another CA, or none, can neither send nor receive a
// single Raft message, so it never gets any state.

// LoadTLS reads a server's PEM certificate and key and the PEM CA bundle
// that signs every server's certificate, and returns the mutual-TLS
// config Config.TLS wants: the certificate presented both when serving
// and when dialing, the CA trusted for both directions, and client
// certificates required. It also returns the CA's PEM text.
func LoadTLS(certFile, keyFile, caFile string) (*tls.Config, []byte, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("load TLS CA: %w", err)
	}
	pool, err := CertPool(caPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("load TLS CA %s: %w", caFile, err)
	}
	return MutualTLS(cert, pool), caPEM, nil
}

// MutualTLS is the config LoadTLS returns, for a certificate and CA pool
// already in memory.
func MutualTLS(cert tls.Certificate, ca *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		RootCAs:      ca,
		ClientCAs:    ca,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

// CertPool parses a PEM bundle of CA certificates.
func CertPool(pemText []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := pemText; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse CA certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found: give the CA certificate in PEM")
	}
	return pool, nil
}

// tlsStreamLayer is a raft.StreamLayer over TLS.
type tlsStreamLayer struct {
	net.Listener // a tls.Listener
	advertise    net.Addr
	cfg          *tls.Config
	log          hclog.Logger
}

// newTLSTransport is raft.NewTCPTransportWithLogger over TLS with cfg.
func newTLSTransport(bind string, advertise net.Addr, cfg *tls.Config, log hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs == nil || cfg.RootCAs == nil || len(cfg.Certificates) == 0 {
		return nil, errors.New("raft TLS needs mutual authentication: a certificate, a CA for both directions and client certificates required (see LoadTLS)")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	sl := &tlsStreamLayer{Listener: tls.NewListener(ln, cfg), advertise: advertise, cfg: cfg, log: log}
	if !advertisable(sl.Addr()) {
		ln.Close()
		return nil, fmt.Errorf("raft address %s cannot be advertised: bind a specific IP or set an advertise address", sl.Addr())
	}
	return raft.NewNetworkTransportWithLogger(sl, 3, 10*time.Second, log), nil
}

// Dial connects to a peer and completes the TLS handshake, verifying the
// peer's certificate against the CA and the dialed host.
func (l *tlsStreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(addr))
	if err != nil {
		return nil, err
	}
	cfg := l.cfg.Clone()
	cfg.ServerName = host
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
	return d.DialContext(ctx, "tcp", string(addr))
}

// Accept returns the next connection; its TLS handshake runs on its first
// read, in Raft's goroutine for the connection, so a slow peer does not
// hold up the others. A peer without a certificate from the CA fails the
// handshake: it is logged, and Raft drops the connection.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c.(*tls.Conn), log: l.log}, nil
}

// peerConn is an accepted Raft connection that completes its handshake,
// within handshakeTimeout, before its first read.
type peerConn struct {
	*tls.Conn
	log  hclog.Logger
	once sync.Once
}

const handshakeTimeout = 10 * time.Second

func (c *peerConn) Read(b []byte) (int, error) {
	c.once.Do(func() {
		_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
		if err := c.Handshake(); err != nil {
			c.log.Warn("refused a raft connection: TLS handshake failed (a peer needs a certificate signed by the cluster's CA)", "from", c.RemoteAddr().String(), "error", err)
			return
		}
		_ = c.SetDeadline(time.Time{})
	})
	return c.Conn.Read(b)
}

// Addr is the advertised address, or the listener's.
func (l *tlsStreamLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.Listener.Addr()
}
