// Package tlstest makes certificates for tests: a CA and the server and
// client certificates it signs (ECDSA P-256, crypto/x509), as PEM, and
// writes them to files.
package tlstest

import (
	"bytes"
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
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM (a trust store).
	PEM []byte
}

var serial = big.NewInt(time.Now().UnixNano())

func nextSerial() *big.Int {
	serial = new(big.Int).Add(serial, big.NewInt(1))
	return new(big.Int).Set(serial)
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"weir tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Leaf describes a certificate to issue.
type Leaf struct {
	Subject pkix.Name
	// Hosts are DNS names and IP addresses (server certificates);
	// default 127.0.0.1, ::1 and localhost.
	Hosts []string
	// NotBefore and NotAfter default to an hour ago and a day ahead.
	NotBefore, NotAfter time.Time
}

// Issued is a certificate and its key.
type Issued struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
	Key             *ecdsa.PrivateKey
}

// Issue signs a certificate usable for servers and clients.
func (ca *CA) Issue(t testing.TB, l Leaf) *Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if l.NotBefore.IsZero() {
		l.NotBefore = time.Now().Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: l.Subject, NotBefore: l.NotBefore, NotAfter: l.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	hosts := l.Hosts
	if hosts == nil {
		hosts = []string{"127.0.0.1", "::1", "localhost"}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Cert:    cert, Key: key,
	}
}

// KeyStore is the PEM key store Kafka's ssl.keystore.location reads: the
// key, then the certificate chain.
func (i *Issued) KeyStore() []byte { return append(append([]byte(nil), i.KeyPEM...), i.CertPEM...) }

// TLSCertificate is the certificate for a Go client or server.
func (i *Issued) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(i.CertPEM, i.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Write writes data to dir/name and returns the path.
func Write(t testing.TB, dir, name string, data ...[]byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	if err := os.WriteFile(p, all, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Dir is a fresh temporary directory whose path has non-ASCII characters
// and a space (paths of certificates must work whatever they hold).
func Dir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "certificats d'été ✓")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// EncryptKey encrypts a PEM private key with a password as
// `openssl pkcs8 -topk8 -v2 aes-256-cbc` does (PBES2, what Kafka's
// ssl.key.password decrypts). openssl is installed by scripts/test.
func EncryptKey(t testing.TB, keyPEM []byte, password string) []byte {
	t.Helper()
	cmd := exec.Command("openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:"+password)
	cmd.Stdin = bytes.NewReader(keyPEM)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl pkcs8: %v", err)
	}
	return out
}
