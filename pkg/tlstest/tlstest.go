// Package tlstest makes certificate authorities and certificates for
// tests, in memory (ECDSA P-256), and writes them as PEM files.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CA is a test certificate authority.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the CA certificate in PEM
	key  *ecdsa.PrivateKey
}

// nextSerial returns a random 128-bit serial number.
func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic("tlstest: no randomness: " + err.Error())
	}
	return n
}

// NewCA makes a self-signed CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Issue makes a certificate for name, valid as a server and a client
// certificate for the IP addresses and DNS names in hosts.
func (ca *CA) Issue(t testing.TB, name string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.IssueValid(t, name, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), hosts...)
}

// IssueValid is Issue for a certificate valid from notBefore to notAfter
// (an expired one, or one not valid yet).
func (ca *CA) IssueValid(t testing.TB, name string, notBefore, notAfter time.Time, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// Files are the PEM files of one server.
type Files struct{ Cert, Key, CA string }

// Write issues a certificate for name (see Issue) and writes it, its key
// and the CA certificate to a new directory.
func (ca *CA) Write(t testing.TB, name string, hosts ...string) Files {
	t.Helper()
	cert, key := ca.Issue(t, name, hosts...)
	return ca.WritePEM(t, name, cert, key)
}

// WritePEM writes a certificate and key (from Issue or IssueValid) and
// the CA certificate to a new directory.
func (ca *CA) WritePEM(t testing.TB, name string, cert, key []byte) Files {
	t.Helper()
	dir := t.TempDir()
	f := Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key"), CA: filepath.Join(dir, "ca.crt")}
	require.NoError(t, os.WriteFile(f.Cert, cert, 0o600))
	require.NoError(t, os.WriteFile(f.Key, key, 0o600))
	require.NoError(t, os.WriteFile(f.CA, ca.PEM, 0o600))
	return f
}

// KeyPair issues a certificate for name (see Issue) as a tls.Certificate.
func (ca *CA) KeyPair(t testing.TB, name string, hosts ...string) tls.Certificate {
	t.Helper()
	cert, key := ca.Issue(t, name, hosts...)
	c, err := tls.X509KeyPair(cert, key)
	require.NoError(t, err)
	return c
}
