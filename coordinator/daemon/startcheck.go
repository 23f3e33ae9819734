package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// checkURLs refuses a start whose URLs do not match its TLS settings: a
// server with TLS serves HTTPS only and talks HTTPS to the others; one
// without cannot verify an https:// peer.
func checkURLs(cfg Config) error {
	on := cfg.TLS.enabled()
	// check checks URL u, given as flag (--advertise URL, --peer ID=URL).
	check := func(flag, u string) error {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s: use an http:// or https:// URL with a host, e.g. https://10.0.0.1:7070", flag)
		}
		switch {
		case on && p.Scheme == "http":
			return fmt.Errorf("%s: with --tls-cert this server serves HTTPS and talks HTTPS to the others: use https://%s", flag, p.Host)
		case !on && p.Scheme == "https":
			return fmt.Errorf("%s: this server runs without TLS, so it can neither serve HTTPS nor verify a server that does: use http://%s, or start it with --tls-cert, --tls-key and --tls-ca of the cluster's CA", flag, p.Host)
		}
		return nil
	}
	if cfg.Advertise != "" {
		if err := check("--advertise "+cfg.Advertise, cfg.Advertise); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cfg.Peers)) {
		if err := check("--peer "+id+"="+cfg.Peers[id], cfg.Peers[id]); err != nil {
			return err
		}
	}
	for _, u := range cfg.Server.Join {
		if err := check("--join "+u, u); err != nil {
			return err
		}
	}
	return nil
}

// checkCert refuses a start with certificates other servers and tasks
// would refuse: the CA file holds no CA certificate; the server's
// certificate is expired or not valid yet, not signed by that CA, or does
// not name the host of --advertise (or of the Raft address).
func checkCert(cfg Config, cert tls.Certificate, caPEM []byte, now time.Time) error {
	f := cfg.TLS
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("--tls-cert %s: %w", f.Cert, err)
		}
	}
	pool := x509.NewCertPool()
	var notCA []string
	for rest := caPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if b.Type != "CERTIFICATE" || err != nil {
			continue // LoadTLS has parsed them
		}
		if !c.IsCA || !c.BasicConstraintsValid {
			notCA = append(notCA, c.Subject.String())
			continue
		}
		pool.AddCert(c)
	}
	if len(notCA) > 0 {
		return fmt.Errorf("--tls-ca %s: certificate %q is not a CA certificate (it lacks basicConstraints CA:TRUE): give the certificate of the CA that signed the servers' certificates, not a server's own", f.CA, notCA[0])
	}
	const when = "2006-01-02 15:04:05 UTC"
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Errorf("--tls-cert %s: certificate %q expired at %s (valid from %s): renew it", f.Cert, leaf.Subject.String(), leaf.NotAfter.UTC().Format(when), leaf.NotBefore.UTC().Format(when))
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("--tls-cert %s: certificate %q is not valid before %s (now is %s): wait, reissue it, or check this machine's clock", f.Cert, leaf.Subject.String(), leaf.NotBefore.UTC().Format(when), now.UTC().Format(when))
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("--tls-cert %s: certificate %q (issuer %q) is not signed by the CA in --tls-ca %s (%v): give a certificate that CA signed, or the CA that signed this one", f.Cert, leaf.Subject.String(), leaf.Issuer.String(), f.CA, err)
	}
	for _, h := range hostsToName(cfg) {
		if err := leaf.VerifyHostname(h.host); err != nil {
			return fmt.Errorf("--tls-cert %s: certificate %q names %s, not %s, the host of %s: the other servers and tasks would refuse it: reissue it for %s, or set %s to a host it names", f.Cert, leaf.Subject.String(), names(leaf), h.host, h.flag, h.host, h.set)
		}
	}
	return nil
}

// namedHost is a host the certificate must name, the flag it comes from,
// and the flag that would change it.
type namedHost struct{ host, flag, set string }

// hostsToName lists the hosts the server's certificate must name: that of
// its API URL (--advertise, else --http-addr unless a wildcard) and of its
// Raft address (--raft-advertise, else --raft-addr if a specific IP).
func hostsToName(cfg Config) []namedHost {
	var out []namedHost
	if cfg.Advertise != "" {
		if u, err := url.Parse(cfg.Advertise); err == nil && u.Hostname() != "" {
			out = append(out, namedHost{u.Hostname(), "--advertise " + cfg.Advertise, "--advertise"})
		}
	} else if h, _, err := net.SplitHostPort(cfg.HTTPAddr); err == nil && specific(h) {
		out = append(out, namedHost{h, "--http-addr " + cfg.HTTPAddr, "--advertise"})
	}
	if a := cfg.Server.RaftAdvertise; a != "" {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			out = append(out, namedHost{h, "--raft-advertise " + a, "--raft-advertise"})
		}
	} else if h, _, err := net.SplitHostPort(cfg.Server.RaftAddr); err == nil && specific(h) {
		out = append(out, namedHost{h, "--raft-addr " + cfg.Server.RaftAddr, "--raft-advertise"})
	}
	return out
}

// specific reports whether h is an IP other than a wildcard (0.0.0.0, ::).
func specific(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && !ip.IsUnspecified()
}

// names lists the IPs and DNS names a certificate is for.
func names(c *x509.Certificate) string {
	var n []string
	for _, ip := range c.IPAddresses {
		n = append(n, ip.String())
	}
	n = append(n, c.DNSNames...)
	if len(n) == 0 {
		return "no IP or DNS name"
	}
	return strings.Join(n, ", ")
}
