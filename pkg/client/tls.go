package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// EnvTLSCA names the variable holding the CA that signed the coordinator's
// certificate, when it serves HTTPS: a PEM file's path, or the PEM text
// itself (as backends pass it to tasks). The CLI's --tls-ca and atom read it.
const EnvTLSCA = "ATOM_TLS_CA"

// ErrUntrustedCertificate: the coordinator's certificate did not verify
// against the CAs the client trusts. It is not retried.
var ErrUntrustedCertificate = errors.New("coordinator certificate not trusted")

// TLSConfig returns a client TLS config that trusts the system's roots
// and the CA certificates in ca: a path to a PEM file, or PEM text.
func TLSConfig(ca string) (*tls.Config, error) {
	pemText := []byte(ca)
	if !strings.Contains(ca, "-----BEGIN") {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("read TLS CA: %w", err)
		}
		pemText = b
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pemText) {
		return nil, fmt.Errorf("TLS CA %s holds no PEM certificate: give the CA certificate that signed the coordinator's, in PEM", caName(ca))
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}

func caName(ca string) string {
	if strings.Contains(ca, "-----BEGIN") {
		return "(PEM text)"
	}
	return ca
}

// TrustCA makes c trust the CA in ca (see TLSConfig) when it talks to an
// HTTPS coordinator; "" changes nothing.
func (c *Client) TrustCA(ca string) error {
	if ca == "" {
		return nil
	}
	cfg, err := TLSConfig(ca)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	hc := &http.Client{Transport: tr}
	if c.HTTP != nil {
		hc.Timeout = c.HTTP.Timeout
	}
	c.HTTP = hc
	return nil
}

// certError turns a failed certificate verification into an error that
// says what to do, wrapping ErrUntrustedCertificate; other errors pass.
func certError(addr string, err error) error {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &he) {
		// The CA may be the right one: the name is what is wrong.
		return fmt.Errorf("%w: coordinator %s presented a certificate that does not name this address (%v): use an address its certificate names, or give the server a certificate that names this one", ErrUntrustedCertificate, addr, err)
	}
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &ci) {
		return fmt.Errorf("%w: coordinator %s presented a certificate this client cannot verify (%v): give the CA that signed it with --tls-ca or $%s", ErrUntrustedCertificate, addr, err, EnvTLSCA)
	}
	return err
}
