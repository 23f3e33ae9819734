package daemon

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/atom-sched/atom/coordinator/server"
)

// TLSFiles are the PEM files of a server that serves over TLS
// (coordinator server --tls-cert, --tls-key, --tls-ca): its certificate
// and key, and the CA that signed every server's certificate. With them:
//
//   - the HTTP API is served over HTTPS with that certificate; clients
//     (the CLI, atom) verify it against the CA;
//   - the Raft transport runs over mutual TLS (server.LoadTLS);
//   - server-to-server requests (writes forwarded to the leader, joins,
//     logs) go over HTTPS, verify the peer against the CA and present
//     this server's certificate, and the /internal/ endpoints accept only
//     callers that present a certificate the CA signed (besides the
//     shared secret);
//   - tasks get the CA in ATOM_TLS_CA, so atom trusts the coordinator.
type TLSFiles struct{ Cert, Key, CA string }

// enabled reports whether any file is set; load refuses a partial set.
func (f TLSFiles) enabled() bool { return f != TLSFiles{} }

// load returns the mutual-TLS config and the CA's PEM text.
func (f TLSFiles) load() (*tls.Config, []byte, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, nil, errors.New("TLS needs a certificate, its key and the CA together (--tls-cert, --tls-key, --tls-ca)")
	}
	return server.LoadTLS(f.Cert, f.Key, f.CA)
}

// httpsListener serves ln over TLS with cfg's certificate. Client
// certificates are optional (users and tasks have none) but verified
// against the CA when given: the /internal/ endpoints require one.
func httpsListener(ln net.Listener, cfg *tls.Config) net.Listener {
	c := cfg.Clone()
	c.ClientAuth = tls.VerifyClientCertIfGiven
	return tls.NewListener(ln, c)
}

// peerTransport is the transport of server-to-server requests: over TLS
// with cfg (the CA verifies the peer, this server's certificate is
// presented), or plain when cfg is nil.
func peerTransport(cfg *tls.Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg != nil {
		c := cfg.Clone()
		c.ClientAuth, c.ClientCAs = tls.NoClientCert, nil
		tr.TLSClientConfig = c
	}
	return tr
}

// peerClients are the server-to-server HTTP clients: requests bounded by
// 30 s, and log streams, which last as long as their task (only the
// response header is bounded).
func peerClients(cfg *tls.Config) (requests, logs *http.Client) {
	requests = &http.Client{Timeout: 30 * time.Second, Transport: peerTransport(cfg)}
	lt := peerTransport(cfg)
	lt.ResponseHeaderTimeout = 10 * time.Second
	return requests, &http.Client{Transport: lt}
}

// fromPeer reports whether r came from another server: over TLS, with a
// client certificate the CA signed (the listener verified it).
func fromPeer(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.VerifiedChains) > 0
}
