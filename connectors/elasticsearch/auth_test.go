package elasticsearch

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
)

// The test servers run without security, so TLS and credentials are
// checked by a TLS-terminating proxy in front of the real server that
// demands the configured Authorization header (what a secured cluster or
// its load balancer does).
func TestTLSAndAuth(t *testing.T) {
	s := server(t, searchtest.OpenSearch2) // also exercises identification over TLS with auth
	u, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	var want atomic.Value
	var refused atomic.Int32
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Authorization"), want.Load().(string)) {
			refused.Add(1)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o644)

	for _, c := range []struct {
		name string
		mod  func(*Config)
		auth string
	}{
		{"basic+ca", func(c *Config) { c.Username, c.Password, c.CAFile = "weir", "s3cret", caFile }, "Basic d2VpcjpzM2NyZXQ="},
		{"apikey+insecure", func(c *Config) { c.APIKey, c.InsecureSkipVerify = "aWQ6a2V5", true }, "ApiKey aWQ6a2V5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want.Store(c.auth)
			index := indexName(t)
			ix, d := newIndexer(t, s, index, func(cfg *Config) { cfg.URLs = []string{proxy.URL}; c.mod(cfg) })
			addFlush(t, ix, rec("a", `{"x":1}`), rec("b", `{"x":2}`))
			if n := count(t, s, index); n != 2 || d.len() != 0 {
				t.Fatalf("count %d, dead letters %v", n, d.errs)
			}
		})
	}
	if refused.Load() != 0 {
		t.Fatalf("proxy refused %d requests with good credentials", refused.Load())
	}
	refused.Store(0)

	// Wrong credentials: Flush fails (not retriable), nothing is
	// dead-lettered, and the records are sent again once they are right.
	want.Store("Basic other")
	bad, bd := newIndexer(t, s, "weir-auth-refused", func(cfg *Config) { cfg.URLs = []string{proxy.URL}; cfg.InsecureSkipVerify = true })
	bad.Add(t.Context(), []*kgo.Record{rec("a", `{}`), rec("b", `{}`)})
	if err := bad.Flush(t.Context()); !errors.Is(err, ErrRefused) || errors.Is(err, connectors.ErrRetriable) || bd.len() != 0 {
		t.Fatalf("Flush with wrong credentials: %v (dead letters %d), want ErrRefused", err, bd.len())
	}
	want.Store("")
	if err := bad.Flush(t.Context()); err != nil {
		t.Fatalf("Flush once credentials match: %v", err)
	}
	if n := count(t, s, "weir-auth-refused"); n != 2 {
		t.Fatalf("count %d after the refusal, want 2", n)
	}

	// Without the CA the certificate is not trusted: the server is
	// unreachable (retriable), nothing is dead-lettered.
	want.Store("")
	ix, d := newIndexer(t, s, "weir-tls-untrusted", func(cfg *Config) { cfg.URLs = []string{proxy.URL} })
	ix.Add(t.Context(), []*kgo.Record{rec("a", `{}`)})
	if err := ix.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") || d.len() != 0 {
		t.Fatalf("Flush with an untrusted certificate: %v (dead letters %d)", err, d.len())
	}
}
