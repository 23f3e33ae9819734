package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// webhookCerts are a CA and a serving certificate it signed, for a webhook
// server on 127.0.0.1, in PEM.
type webhookCerts struct {
	caPEM, caKeyPEM, certPEM, keyPEM []byte
}

// writeWebhookCerts makes a CA (named kueue-ca, as Kueue's cert rotator
// checks its CA) and a serving certificate for dnsName and 127.0.0.1,
// RSA keys in PKCS #1 (what the rotator reads), valid for ten years (it
// replaces certificates that expire within 90 days), and writes the
// serving pair to dir as tls.crt and tls.key, as a mounted Secret would
// be.
func writeWebhookCerts(dir, dnsName string) (*webhookCerts, error) {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kueue-ca", Organization: []string{"kueue"}},
		DNSNames:              []string{"kueue-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create the webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: dnsName},
		DNSNames:     []string{dnsName},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create the webhook serving certificate: %w", err)
	}
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	w := &webhookCerts{
		caPEM:    pemOf("CERTIFICATE", caDER),
		caKeyPEM: pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)),
		certPEM:  pemOf("CERTIFICATE", der),
		keyPEM:   pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), w.certPEM, 0o600); err != nil {
		return nil, err
	}
	return w, os.WriteFile(filepath.Join(dir, "tls.key"), w.keyPEM, 0o600)
}

// secretData is the certificates as the cert rotator keeps them in its
// Secret.
func (w *webhookCerts) secretData() map[string][]byte {
	return map[string][]byte{"ca.crt": w.caPEM, "ca.key": w.caKeyPEM, "tls.crt": w.certPEM, "tls.key": w.keyPEM}
}

// caBundle is the CA as a webhook configuration's caBundle field holds it
// in JSON.
func (w *webhookCerts) caBundle() string { return base64.StdEncoding.EncodeToString(w.caPEM) }

func (w *webhookCerts) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(w.caPEM)
	return p
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
