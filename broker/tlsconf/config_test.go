package tlsconf

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"strings"
	"testing"

	"weir/broker/tlsconf/tlstest"
)

// openssl encrypts keys the way operators do (openssl pkcs8 -topk8 -v2).
func opensslEncrypt(t *testing.T, keyPEM []byte, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("openssl not on PATH")
		}
		t.Skip("openssl not on PATH")
	}
	cmd := exec.Command(path, append([]string{"pkcs8", "-topk8", "-passout", "pass:s3cret-pw"}, args...)...)
	cmd.Stdin = strings.NewReader(string(keyPEM))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	return out
}

func TestEncryptedKey(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	leaf := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "enc"}})
	for _, args := range [][]string{
		{"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256"},
		{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		{"-v2", "des3"},
	} {
		enc := opensslEncrypt(t, leaf.KeyPEM, args...)
		if !strings.Contains(string(enc), "ENCRYPTED PRIVATE KEY") {
			t.Fatalf("%v: not encrypted: %s", args, enc)
		}
		cert, err := parseKeyStore(append(enc, leaf.CertPEM...), nil, "s3cret-pw")
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if cert.Leaf.Subject.CommonName != "enc" {
			t.Fatalf("%v: leaf %v", args, cert.Leaf.Subject)
		}
		for _, pw := range []string{"wrong-pw", ""} {
			_, err = parseKeyStore(append(enc, leaf.CertPEM...), nil, pw)
			if err == nil || strings.Contains(err.Error(), pw+"x") || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("%v: password %q: %v", args, pw, err)
			}
			if !strings.Contains(err.Error(), "ssl.key.password") {
				t.Fatalf("%v: error %q does not name ssl.key.password", args, err)
			}
		}
	}
}

func TestKeyStoreErrors(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	a := ca.Issue(t, tlstest.Leaf{})
	b := ca.Issue(t, tlstest.Leaf{})
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"mismatch": {append(append([]byte(nil), a.KeyPEM...), b.CertPEM...), "does not match"},
		"no key":   {a.CertPEM, "no PEM PRIVATE KEY"},
		"no cert":  {a.KeyPEM, "no PEM CERTIFICATE"},
		"two keys": {append(append(append([]byte(nil), a.KeyPEM...), b.KeyPEM...), a.CertPEM...), "more than one private key"},
	} {
		if _, err := parseKeyStore(c.data, nil, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
		}
	}
}

func TestParseSettings(t *testing.T) {
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "ca")
	ks := tlstest.Write(t, dir, "ks.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	all := map[string]string{
		"ssl.keystore.location":                     ks,
		"ssl.cipher.suites":                         "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"listener.name.ext.ssl.enabled.protocols":   "TLSv1.2",
		"listener.name.other.ssl.enabled.protocols": "bogus",
	}
	c, err := Parse("EXT", ListenerSettings(all, "EXT"), all)
	if err != nil {
		t.Fatal(err)
	}
	if c.MinVersion != tls.VersionTLS12 || c.MaxVersion != tls.VersionTLS12 || len(c.CipherSuites) != 1 || c.ClientAuth != ClientAuthNone {
		t.Fatalf("%+v", c)
	}
	for k, v := range map[string]string{
		"ssl.cipher.suites": "TLS_RSA_WITH_RC4_128_SHA",
		"ssl.client.auth":   "maybe",
		"ssl.protocol":      "SSLv3",
	} {
		s := ListenerSettings(all, "EXT")
		s[k] = v
		if _, err := Parse("EXT", s, all); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}

func FuzzMappingRules(f *testing.F) {
	for _, s := range []string{
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`,
		`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
		`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`,
		`RULE:(.*)/$1$2$$\$/U`,
		"",
	} {
		f.Add(s, "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParseRules(rules)
		if err != nil {
			return
		}
		// Mapping never panics; a name comes only from a rule.
		if name, err := m.Map(dn); err == nil && len(m.rules) == 0 {
			t.Fatalf("%q: no rules mapped %q to %q", rules, dn, name)
		}
	})
}
