package elasticsearch

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"weir/broker/tlsconf/tlstest"
	"weir/connectors/elasticsearch/searchtest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMutualTLS: in front of the real search server (which runs without
// security), a TLS-terminating proxy that requires a client certificate
// of its CA, as a cluster with xpack.security.http.ssl.client_authentication
// = required does. The sink with cert_file/key_file (an encrypted key and
// key_password) and ca_file indexes through it; without the certificate,
// or with server_name naming another host, it does not get through.
func TestMutualTLS(t *testing.T) {
	s := server(t, searchtest.OpenSearch2)
	u, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "search CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "search"}, Hosts: []string{"127.0.0.1", "search.weir.test"}})
	proxy := httptest.NewUnstartedServer(rp)
	proxy.TLS = &tls.Config{Certificates: []tls.Certificate{srv.TLSCertificate(t)}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	proxy.StartTLS()
	t.Cleanup(proxy.Close)
	cli := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "weir-sink"}})
	const keyPass = "es-Key-pa55-3"
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	certFile := tlstest.Write(t, dir, "client.pem", cli.CertPEM)
	keyFile := tlstest.Write(t, dir, "client-key.pem", tlstest.EncryptKey(t, cli.KeyPEM, keyPass))

	index := indexName(t)
	ix, d := newIndexer(t, s, index, func(cfg *Config) {
		cfg.URLs, cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.KeyPassword = []string{proxy.URL}, caFile, certFile, keyFile, keyPass
		cfg.ServerName = "search.weir.test"
	})
	addFlush(t, ix, rec("a", `{"x":1}`), rec("b", `{"x":2}`))
	if n := count(t, s, index); n != 2 || d.len() != 0 {
		t.Fatalf("count %d, dead letters %v", n, d.errs)
	}
	for name, mod := range map[string]func(*Config){
		"no client certificate": func(cfg *Config) { cfg.CertFile, cfg.KeyFile, cfg.KeyPassword = "", "", "" },
		"wrong server name":     func(cfg *Config) { cfg.ServerName = "elsewhere.weir.test" },
	} {
		ix, d := newIndexer(t, s, index, func(cfg *Config) {
			cfg.URLs, cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.KeyPassword = []string{proxy.URL}, caFile, certFile, keyFile, keyPass
			mod(cfg)
		})
		ix.Add(t.Context(), []*kgo.Record{rec("c", `{}`)})
		err := ix.Flush(t.Context())
		if err == nil || d.len() != 0 || strings.Contains(err.Error(), keyPass) {
			t.Errorf("%s: Flush = %v (dead letters %d), want a TLS failure", name, err, d.len())
		}
		t.Logf("%s: %v", name, err)
	}
	if n := count(t, s, index); n != 2 {
		t.Errorf("count %d after the refused flushes, want 2", n)
	}
}
