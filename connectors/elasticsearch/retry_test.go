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
// rejects writes under concurrent bulks with 429
// es_rejected_execution_exception. Elasticsearch 7 rejects shard-level
// items; Elasticsearch 8 also coordinates bulks on the write pool, so it
// rejects whole bulk requests too. The sink retries both inside Flush
// until every document is stored, and dead-letters nothing.
func TestRetryableRejectionsAreRetriedUntilStored(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dedicated servers")
	}
	for _, f := range []searchtest.Flavor{searchtest.Elasticsearch7, searchtest.Elasticsearch8} {
		t.Run(string(f), func(t *testing.T) { testRejections(t, f) })
	}
}

func testRejections(t *testing.T, f searchtest.Flavor) {
	queue := "1"
	n, workers := 3000, 6
	if f == searchtest.Elasticsearch8 {
		// Each bulk takes a write thread to coordinate as well as for its
		// shards: a longer queue keeps rejections from starving it.
		queue, n, workers = "4", 500, 6
	}
	s := searchtest.Dedicated(t, f, map[string]string{
		"thread_pool.write.size":       "1",
		"thread_pool.write.queue_size": queue,
	})
	index := "weir-rejections"
	s.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":6,"number_of_replicas":0}}`))
	ix, d := newIndexer(t, s, index, func(c *Config) {
		c.Workers = workers
		c.BulkMaxBytes = 4 << 10
		c.RetryInitial = 20 * time.Millisecond
		c.RetryMax = 500 * time.Millisecond
		c.MaxRetries = 50
	})
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
	if st.Stored != uint64(n) || st.Retried == 0 {
		t.Fatalf("the server rejected nothing (stats %+v): the test did not exercise retries", st)
	}
	switch f {
	case searchtest.Elasticsearch7:
		if st.Busy != 0 {
			t.Fatalf("stats %+v: Elasticsearch 7 refused whole requests", st)
		}
	case searchtest.Elasticsearch8:
		if st.Busy == 0 {
			t.Fatalf("stats %+v: no whole bulk request was refused; the test did not exercise Elasticsearch 8's request-level 429", st)
		}
	}
	t.Logf("stats %+v", st)
}

// faultProxy forwards to a real server and, while down is set, answers
// every bulk request itself with that status (a load balancer in front of
// a cluster that is restarting).
type faultProxy struct {
	*httptest.Server
	down atomic.Int32
	busy atomic.Bool // answer as a full thread pool (es_rejected_execution_exception)
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
			typ := "unavailable"
			if p.busy.Load() {
				typ = "es_rejected_execution_exception"
			}
			fmt.Fprintf(w, `{"error":{"type":%q,"reason":"injected"},"status":%d}`, typ, st)
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

	// A full thread pool refusing whole requests (Elasticsearch 8 under
	// write load) is retried inside Flush max_retries times; then the
	// items are kept for the next Flush, not dead-lettered.
	bix, bd := newIndexer(t, s, index, func(c *Config) {
		cfg(c)
		c.Workers = 1 // one bulk request per round
		c.MaxRetries, c.RetryInitial, c.RetryMax = 3, 5*time.Millisecond, 20*time.Millisecond
	})
	addFlush(t, bix, rec("busy-warm", `{}`))
	p.down.Store(429)
	p.busy.Store(true)
	hits := p.hits.Load()
	if err := bix.Add(ctx, []*kgo.Record{rec("busy-a", `{}`), rec("busy-b", `{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := bix.Flush(ctx); !errors.Is(err, connectors.ErrRetriable) || bd.len() != 0 {
		t.Fatalf("Flush while the thread pool refuses requests: %v (dead letters %d), want ErrRetriable", err, bd.len())
	}
	if n := p.hits.Load() - hits; n != 4 {
		t.Fatalf("%d requests refused, want 4 (one and 3 retries inside Flush)", n)
	}
	if st := bix.Stats(); st.Busy != 6 { // 2 items x 3 retries
		t.Fatalf("stats %+v, want Busy 6", st)
	}
	p.down.Store(0)
	p.busy.Store(false)
	if err := bix.Flush(ctx); err != nil || bd.len() != 0 {
		t.Fatalf("Flush once the pool has room: %v (dead letters %d)", err, bd.len())
	}
	if doc(t, s, index, "busy-b") == nil {
		t.Fatal("busy-b not stored after the pool had room")
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
