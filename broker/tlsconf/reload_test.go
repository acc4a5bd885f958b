package tlsconf

import (
	"crypto/x509/pkix"
	"os"
	"testing"
	"time"

	"weir/broker/tlsconf/tlstest"
)

// TestReloadSeesChangeOfSameSizeAndTime: a key store replaced by one of
// the same size with the same modification time (two writes within the
// file system's timestamp granularity, as a rotation that writes twice in
// a row can do; a copy that keeps the old file's time) is reloaded. A
// check by time and size missed it (broker/kafka TestTLSCertificateRotation
// once served the previous certificate for 10 s).
func TestReloadSeesChangeOfSameSizeAndTime(t *testing.T) {
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "weir test CA")
	first := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker-2"}}).KeyStore()
	var second []byte
	for range 200 { // ECDSA signatures vary in length: find a same-size pair
		if ks := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker-3"}}).KeyStore(); len(ks) == len(first) {
			second = ks
			break
		}
	}
	if second == nil {
		t.Fatal("no key store of the same size in 200 tries")
	}
	keystore := tlstest.Write(t, dir, "broker.pem", first)
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(keystore, mod, mod); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("SSL", map[string]string{SSLKeystoreLocation: keystore, SSLTruststoreLocation: tlstest.Write(t, dir, "ca.pem", ca.PEM)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cn := s.Certificate().Subject.CommonName; cn != "broker-2" {
		t.Fatalf("serving %q", cn)
	}
	tlstest.Write(t, dir, "broker.pem", second)
	if err := os.Chtimes(keystore, mod, mod); err != nil {
		t.Fatal(err)
	}
	changed, err := s.Reload()
	if err != nil || !changed {
		t.Fatalf("reload after the key store changed: changed=%v err=%v", changed, err)
	}
	if cn := s.Certificate().Subject.CommonName; cn != "broker-3" {
		t.Fatalf("after the change the server uses %q, want broker-3", cn)
	}
	if changed, err := s.Reload(); err != nil || changed {
		t.Fatalf("reload with nothing changed: changed=%v err=%v", changed, err)
	}
}
