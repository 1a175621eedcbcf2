package kafkatest

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
)

// PKI is a throwaway certificate authority for TLS tests on loopback: a
// CA, a broker certificate for 127.0.0.1 and localhost, and a client
// certificate, all as PEM (and as files under a test folder).
type PKI struct {
	// CAPEM is the CA's certificate.
	CAPEM []byte
	// ClientCertPEM and ClientKeyPEM are the client's certificate and
	// PKCS#8 private key.
	ClientCertPEM, ClientKeyPEM []byte
	// CAFile holds CAPEM; KeyStoreFile holds the client's key and
	// certificate (a PEM keystore).
	CAFile, KeyStoreFile string

	ca        *x509.Certificate
	caKey     *ecdsa.PrivateKey
	server    tls.Certificate
	caPool    *x509.CertPool
	serial    int64
	t         testing.TB
	notBefore time.Time
}

// NewPKI makes a CA and the broker's and client's certificates.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{t: t, notBefore: time.Now().Add(-time.Hour)}
	p.caKey = p.newKey()
	tmpl := &x509.Certificate{SerialNumber: p.nextSerial(), Subject: pkix.Name{CommonName: "weir test CA"},
		NotBefore: p.notBefore, NotAfter: p.notBefore.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(p.ca)

	srvCert, srvKey := p.issue("broker", x509.ExtKeyUsageServerAuth, true)
	if p.server, err = tls.X509KeyPair(srvCert, srvKey); err != nil {
		t.Fatal(err)
	}
	p.ClientCertPEM, p.ClientKeyPEM = p.issue("weir-client", x509.ExtKeyUsageClientAuth, false)

	dir := t.TempDir()
	p.CAFile, p.KeyStoreFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem")
	if err := os.WriteFile(p.CAFile, p.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.KeyStoreFile, append(append([]byte{}, p.ClientKeyPEM...), p.ClientCertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *PKI) newKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	return k
}

func (p *PKI) nextSerial() *big.Int {
	p.serial++
	return big.NewInt(p.serial)
}

// issue returns a certificate signed by the CA and its PKCS#8 key, PEM.
func (p *PKI) issue(cn string, usage x509.ExtKeyUsage, loopback bool) (certPEM, keyPEM []byte) {
	key := p.newKey()
	tmpl := &x509.Certificate{SerialNumber: p.nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: p.notBefore, NotAfter: p.notBefore.Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if loopback {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// ServerTLS is the broker's TLS configuration (kfake.TLS); with
// clientCert, the broker requires a client certificate signed by the CA.
func (p *PKI) ServerTLS(clientCert bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if clientCert {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.caPool
	}
	return c
}

// ClientTLS is a client's TLS configuration trusting the CA, with the
// client certificate.
func (p *PKI) ClientTLS() *tls.Config {
	cert, err := tls.X509KeyPair(p.ClientCertPEM, p.ClientKeyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
