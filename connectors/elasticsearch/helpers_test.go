package elasticsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
)

func TestMain(m *testing.M) { searchtest.Main(m) }

// server returns the shared server of flavor f with a template giving
// every weir-* index one shard and no replicas.
func server(t *testing.T, f searchtest.Flavor) *searchtest.Server {
	t.Helper()
	s := searchtest.Shared(t, f)
	s.MustDo(t, "PUT", "/_index_template/weir-tests", []byte(`{"index_patterns":["weir-*"],"priority":1,
		"template":{"settings":{"number_of_shards":1,"number_of_replicas":0}}}`))
	return s
}

// dlq collects dead-lettered records.
type dlq struct {
	mu   sync.Mutex
	recs []*kgo.Record
	errs []error
}

func (d *dlq) add(r *kgo.Record, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recs = append(d.recs, r)
	d.errs = append(d.errs, err)
}

func (d *dlq) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.recs)
}

func newIndexer(t *testing.T, s *searchtest.Server, index string, mod func(*Config)) (*Indexer, *dlq) {
	t.Helper()
	cfg := Defaults()
	cfg.URLs = []string{s.URL}
	cfg.Index = index
	if mod != nil {
		mod(&cfg)
	}
	d := &dlq{}
	ix, err := NewIndexer(cfg, d.add, connectors.NewTestMetrics(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close(context.Background()) })
	return ix, d
}

var offset int64

func rec(key, value string) *kgo.Record {
	offset++
	r := &kgo.Record{Topic: "t", Offset: offset, Value: []byte(value), Timestamp: time.Now()}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

func tombstone(key string) *kgo.Record {
	r := rec(key, "")
	r.Value = nil
	return r
}

func addFlush(t *testing.T, ix *Indexer, rs ...*kgo.Record) {
	t.Helper()
	// A deadline for a stuck sink, not a speed check: one write thread
	// of a search server on a loaded machine takes over a minute for the
	// rejection tests' thousands of retried items.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := ix.Add(ctx, rs); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func count(t *testing.T, s *searchtest.Server, index string) int {
	t.Helper()
	s.MustDo(t, "POST", "/"+index+"/_refresh", nil)
	var c struct{ Count int }
	if err := json.Unmarshal(s.MustDo(t, "GET", "/"+index+"/_count", nil), &c); err != nil {
		t.Fatal(err)
	}
	return c.Count
}

// doc returns the _source of index/id, or nil when it does not exist.
func doc(t *testing.T, s *searchtest.Server, index, id string) map[string]any {
	t.Helper()
	st, b := s.Do(t, "GET", "/"+index+"/_doc/"+id, nil)
	if st == 404 {
		return nil
	}
	if st != 200 {
		t.Fatalf("GET %s/%s: %d %s", index, id, st, b)
	}
	var r struct {
		Source  map[string]any `json:"_source"`
		Version int64          `json:"_version"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.Source["_version"] = float64(r.Version)
	return r.Source
}

func indexName(t *testing.T) string {
	return "weir-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

func jsonf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
