package pemfile

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Client is the TLS side of a client: whom it trusts, the certificate it
// shows (mutual TLS) and how it checks the server. The Kafka clients, the
// schema registry client, the Elasticsearch sink and the MySQL source
// build their tls.Config from one.
type Client struct {
	// CAFile is a PEM file of CA certificates the server's certificate
	// must chain to; CAPEM is the same inline. Neither: the system roots.
	CAFile string
	CAPEM  string
	// CertFile is a PEM file with the client certificate chain, leaf
	// first, and, when KeyFile is empty, its private key too (Kafka's PEM
	// key store); CertPEM and KeyPEM are the same inline. None: no client
	// certificate.
	CertFile, KeyFile string
	CertPEM           string
	KeyPEM            Secret
	// KeyPassword decrypts an encrypted PKCS#8 key.
	KeyPassword Secret
	// ServerName is the name the server's certificate must carry (""
	// means the host dialled).
	ServerName string
	// NoHostnameCheck verifies the chain but not the name (Kafka's
	// ssl.endpoint.identification.algorithm set to "").
	NoHostnameCheck bool
	// InsecureSkipVerify accepts any server certificate: the connection
	// is encrypted but not authenticated. For tests only.
	InsecureSkipVerify bool
}

// HasCert reports whether c names a client certificate.
func (c Client) HasCert() bool { return c.CertFile != "" || c.CertPEM != "" }

// Redacted is what a Secret prints as.
const Redacted = "[redacted]"

// Secret is a password, token or key: it prints as [redacted] through
// fmt, zap and encoding/json, so a config printed by mistake shows no
// secret. Use string(s) where the value is needed.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// MarshalText hides the value from encoders (JSON, zap).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Config builds the tls.Config: files are read now, so a missing file or
// a key that does not decrypt is an error here, naming the setting. The
// client certificate is read again when its files change (checked at
// each new connection), so a renewed certificate is used without a
// restart.
func (c Client) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" || c.CAPEM != "" {
		data := []byte(c.CAPEM)
		if c.CAFile != "" {
			b, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("CA file: %w", err)
			}
			data = append(b, data...)
		}
		pool, _, err := TrustStore(data)
		if err != nil {
			return nil, fmt.Errorf("CA certificates %s: %w", c.where(c.CAFile, "inline"), err)
		}
		cfg.RootCAs = pool
	}
	if c.HasCert() {
		kp := &keyPair{c: c}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	if c.NoHostnameCheck && !c.InsecureSkipVerify {
		// Verify the chain ourselves, without the name.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

func (c Client) where(file, inline string) string {
	if file != "" {
		return file
	}
	return inline
}

// keyPair is the client certificate, read again when its files change.
type keyPair struct {
	c     Client
	mu    sync.Mutex
	cur   *tls.Certificate
	stamp string
}

func (k *keyPair) fileStamp() string {
	s := ""
	for _, p := range []string{k.c.CertFile, k.c.KeyFile} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return s
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.fileStamp()
	if k.cur != nil && st == k.stamp {
		return k.cur, nil
	}
	cert, err := k.load()
	if err != nil {
		if k.cur != nil { // half-written renewal: keep the one in use
			return k.cur, nil
		}
		return nil, err
	}
	k.cur, k.stamp = &cert, st
	return k.cur, nil
}

func (k *keyPair) load() (tls.Certificate, error) {
	certPEM, keyPEM := []byte(k.c.CertPEM), []byte(k.c.KeyPEM)
	if k.c.CertFile != "" {
		b, err := os.ReadFile(k.c.CertFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("client certificate: %w", err)
		}
		certPEM = b
	}
	if k.c.KeyFile != "" {
		b, err := os.ReadFile(k.c.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("client key: %w", err)
		}
		keyPEM = b
	}
	cert, err := KeyStore(certPEM, keyPEM, string(k.c.KeyPassword))
	if err != nil {
		return cert, fmt.Errorf("client certificate %s: %w", k.c.where(k.c.CertFile, "inline"), err)
	}
	if time.Now().After(cert.Leaf.NotAfter) {
		return cert, fmt.Errorf("client certificate %s expired at %s", k.c.where(k.c.CertFile, "inline"), cert.Leaf.NotAfter.Format(time.RFC3339))
	}
	return cert, nil
}
