package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
)

// A real Elasticsearch with a one-thread write pool and a one-slot queue
// rejects shard-level writes under concurrent bulks with 429
// es_rejected_execution_exception: the sink retries exactly those items
// until every document is stored, and dead-letters nothing.
func TestRetryableRejectionsAreRetriedUntilStored(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dedicated server")
	}
	s := searchtest.Dedicated(t, searchtest.Elasticsearch7, map[string]string{
		"thread_pool.write.size":       "1",
		"thread_pool.write.queue_size": "1",
	})
	index := "weir-rejections"
	s.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":6,"number_of_replicas":0}}`))
	ix, d := newIndexer(t, s, index, func(c *Config) {
		c.Workers = 6
		c.BulkMaxBytes = 4 << 10
		c.RetryInitial = 20 * time.Millisecond
		c.RetryMax = 500 * time.Millisecond
		c.MaxRetries = 50
	})
	const n = 3000
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		rs = append(rs, rec(fmt.Sprint("doc-", i), jsonf(`{"i":%d,"pad":"%060d"}`, i, i)))
	}
	addFlush(t, ix, rs...)
	if d.len() != 0 {
		t.Fatalf("%d dead letters: %v", d.len(), d.errs[0])
	}
	if got := count(t, s, index); got != n {
		t.Fatalf("count %d, want %d", got, n)
	}
	st := ix.Stats()
	if st.Retried == 0 {
		t.Fatalf("the server rejected nothing (stats %+v): the test did not exercise retries", st)
	}
	t.Logf("stats %+v", st)
}

// faultProxy forwards to a real server and, while down is set, answers
// every bulk request itself with that status (a load balancer in front of
// a cluster that is restarting).
type faultProxy struct {
	*httptest.Server
	down atomic.Int32
	hits atomic.Int32
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := p.down.Load(); st != 0 {
			p.hits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(st))
			fmt.Fprintf(w, `{"error":{"type":"unavailable","reason":"injected"},"status":%d}`, st)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// When the whole cluster is unavailable, nothing is dead-lettered and
// Flush fails with ErrRetriable (so no offsets are committed); once it is
// back, the next Flush stores everything.
func TestUnavailableServerKeepsRecordsForTheNextFlush(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	p := newFaultProxy(t, s.URL)
	cfg := func(c *Config) { c.URLs = []string{p.URL} }
	ix, d := newIndexer(t, s, index, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addFlush(t, ix, rec("warm", `{"a":0}`)) // product check done through the proxy

	for _, st := range []int{503, 429} {
		p.down.Store(int32(st))
		var rs []*kgo.Record
		for i := 0; i < 50; i++ {
			rs = append(rs, rec(fmt.Sprint(st, "-", i), jsonf(`{"a":%d}`, i)))
		}
		if err := ix.Add(ctx, rs); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			err := ix.Flush(ctx)
			if !errors.Is(err, connectors.ErrRetriable) {
				t.Fatalf("Flush while the server answers %d: %v, want ErrRetriable", st, err)
			}
		}
		if d.len() != 0 {
			t.Fatalf("dead letters while unavailable: %v", d.errs)
		}
		p.down.Store(0)
		if err := ix.Flush(ctx); err != nil {
			t.Fatalf("Flush after recovery: %v", err)
		}
	}
	if got := count(t, s, index); got != 101 {
		t.Fatalf("count %d, want 101", got)
	}
	if p.hits.Load() < 6 {
		t.Fatalf("proxy refused only %d requests", p.hits.Load())
	}

	// No server at all: connection refused is "unavailable" too.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	ix2, d2 := newIndexer(t, s, index, func(c *Config) { c.URLs = []string{dead.URL} })
	if err := ix2.Add(ctx, []*kgo.Record{rec("x", `{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Flush(ctx); !errors.Is(err, connectors.ErrRetriable) || d2.len() != 0 {
		t.Fatalf("Flush without a server: %v (dead letters %d), want ErrRetriable", err, d2.len())
	}
}
