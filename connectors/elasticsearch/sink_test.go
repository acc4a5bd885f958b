package elasticsearch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
)

func TestIndexWithKeyIDsIsIdempotent(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	ix, d := newIndexer(t, s, index, nil)
	batch := func() []*kgo.Record {
		var rs []*kgo.Record
		for i := 0; i < 500; i++ {
			rs = append(rs, rec(fmt.Sprint("k", i), jsonf(`{"n":%d,"msg":"line %d"}`, i, i)))
		}
		return rs
	}
	addFlush(t, ix, batch()...)
	if n := count(t, s, index); n != 500 {
		t.Fatalf("count %d after first delivery, want 500", n)
	}
	addFlush(t, ix, batch()...) // re-delivery after a restart
	if n := count(t, s, index); n != 500 {
		t.Fatalf("count %d after re-delivery, want 500 (duplicates)", n)
	}
	got := doc(t, s, index, "k123")
	if got["msg"] != "line 123" || got["_version"] != float64(2) {
		t.Fatalf("k123 = %v", got)
	}
	if d.len() != 0 {
		t.Fatalf("dead letters: %v", d.errs)
	}
	if st := ix.Stats(); st.Stored != 1000 || st.DeadLettered != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSameDocumentTwiceInOneBatchKeepsTheLast(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	ix, _ := newIndexer(t, s, index, func(c *Config) { c.Workers = 4; c.BulkMaxBytes = 1024 })
	var rs []*kgo.Record
	for v := 0; v < 200; v++ {
		for k := 0; k < 5; k++ {
			rs = append(rs, rec(fmt.Sprint("k", k), jsonf(`{"v":%d,"pad":"%s"}`, v, strings.Repeat("x", 100))))
		}
	}
	addFlush(t, ix, rs...)
	for k := 0; k < 5; k++ {
		if got := doc(t, s, index, fmt.Sprint("k", k)); got["v"] != float64(199) {
			t.Fatalf("k%d = %v, want the last write (v 199)", k, got["v"])
		}
	}
}

func TestIndexTemplateFromFieldsAndEventTime(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	base := indexName(t)
	ix, d := newIndexer(t, s, base+"-%{[svc][name]}-%{+2006.01.02}", func(c *Config) {
		c.TimestampField = "ts"
		c.IDFrom = "field"
		c.IDField = "[id]"
	})
	addFlush(t, ix,
		rec("", `{"id":"a","svc":{"name":"api"},"ts":"2024-03-01T23:59:59Z"}`),
		rec("", `{"id":"b","svc":{"name":"api"},"ts":"2024-03-02T00:00:01Z"}`),
		rec("", `{"id":"c","svc":{"name":"db"},"ts":1709337600000}`), // 2024-03-02T00:00:00Z in ms
		rec("", `{"id":"d","ts":"2024-03-02T00:00:00Z"}`),            // no svc.name: dead letter
		rec("", `{"svc":{"name":"db"},"ts":"2024-03-02T00:00:00Z"}`), // no id: dead letter
	)
	for _, c := range []struct{ index, id string }{
		{base + "-api-2024.03.01", "a"}, {base + "-api-2024.03.02", "b"}, {base + "-db-2024.03.02", "c"},
	} {
		if doc(t, s, c.index, c.id) == nil {
			t.Errorf("document %s not in %s", c.id, c.index)
		}
	}
	if d.len() != 2 {
		t.Fatalf("%d dead letters, want 2: %v", d.len(), d.errs)
	}
	for _, err := range d.errs {
		if !errors.Is(err, connectors.ErrBadRecord) {
			t.Errorf("dead letter error %v does not wrap ErrBadRecord", err)
		}
	}
	if !strings.Contains(d.errs[0].Error(), "field [svc][name] is missing") || !strings.Contains(d.errs[1].Error(), "id_field") {
		t.Fatalf("dead letter reasons: %v", d.errs)
	}
}

func TestTombstonesDelete(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	ix, d := newIndexer(t, s, index, nil)
	addFlush(t, ix, rec("a", `{"x":1}`), rec("b", `{"x":2}`), rec("c", `{"x":3}`))
	addFlush(t, ix, tombstone("b"), tombstone("never-existed"), rec("c", `{"x":4}`), tombstone("c"), rec("c", `{"x":5}`))
	if n := count(t, s, index); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	if doc(t, s, index, "b") != nil {
		t.Fatal("b not deleted")
	}
	if got := doc(t, s, index, "c"); got["x"] != float64(5) {
		t.Fatalf("c = %v, want x 5 (re-created after its delete)", got)
	}
	addFlush(t, ix, tombstone("")) // no key: nothing to delete
	if d.len() != 1 || !strings.Contains(d.errs[0].Error(), "tombstone") {
		t.Fatalf("dead letters %v", d.errs)
	}
}

func TestExternalVersionsNeverGoBack(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	ix, d := newIndexer(t, s, index, func(c *Config) {
		c.VersionType = "external"
		c.VersionField = "ver"
		c.VersionHeader = "weir.version"
	})
	addFlush(t, ix, rec("a", `{"ver":5,"state":"five"}`), rec("b", `{"ver":10,"state":"ten"}`))
	// Replays and reordering: older versions arrive after newer ones.
	addFlush(t, ix, rec("a", `{"ver":3,"state":"three"}`), rec("a", `{"ver":5,"state":"five again"}`))
	if got := doc(t, s, index, "a"); got["state"] != "five" || got["_version"] != float64(5) {
		t.Fatalf("a = %v, want state five at version 5", got)
	}
	addFlush(t, ix, rec("a", `{"ver":7,"state":"seven"}`))
	if got := doc(t, s, index, "a"); got["state"] != "seven" {
		t.Fatalf("a = %v, want seven", got)
	}
	// A delete with an older version does not delete; a newer one does.
	old := tombstone("b")
	old.Headers = append(old.Headers, kgo.RecordHeader{Key: "weir.version", Value: []byte("9")})
	addFlush(t, ix, old)
	if doc(t, s, index, "b") == nil {
		t.Fatal("b deleted by an older version")
	}
	newer := tombstone("b")
	newer.Headers = append(newer.Headers, kgo.RecordHeader{Key: "weir.version", Value: []byte("11")})
	addFlush(t, ix, newer)
	if doc(t, s, index, "b") != nil {
		t.Fatal("b not deleted by a newer version")
	}
	// A stale re-insert after the delete does not resurrect it: the
	// server keeps the delete's version for index.gc_deletes (60s).
	addFlush(t, ix, rec("b", `{"ver":10,"state":"ten"}`))
	if doc(t, s, index, "b") != nil {
		t.Fatal("b resurrected by a replayed older version")
	}
	addFlush(t, ix, rec("c", `{"state":"no version"}`))
	if d.len() != 1 || !strings.Contains(d.errs[0].Error(), "no version") {
		t.Fatalf("dead letters %v", d.errs)
	}
}

func TestMappingConflictsAreDeadLetteredWithTheServersError(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	s.MustDo(t, "PUT", "/"+index, []byte(`{"mappings":{"properties":{"n":{"type":"long"},"at":{"type":"date"}}}}`))
	ix, d := newIndexer(t, s, index, nil)
	var rs []*kgo.Record
	for i := 0; i < 100; i++ {
		switch i {
		case 10:
			rs = append(rs, rec(fmt.Sprint(i), `{"n":"not a number"}`))
		case 50:
			rs = append(rs, rec(fmt.Sprint(i), `{"at":"yesterday-ish"}`))
		case 70:
			rs = append(rs, rec(fmt.Sprint(i), `{"n": 1, broken json`))
		default:
			rs = append(rs, rec(fmt.Sprint(i), jsonf(`{"n":%d}`, i)))
		}
	}
	start := time.Now()
	addFlush(t, ix, rs...)
	if n := count(t, s, index); n != 97 {
		t.Fatalf("count %d, want 97", n)
	}
	if d.len() != 3 {
		t.Fatalf("%d dead letters, want 3: %v", d.len(), d.errs)
	}
	keys := map[string]error{}
	for i, r := range d.recs {
		keys[string(r.Key)] = d.errs[i]
	}
	for _, k := range []string{"10", "50"} {
		var ie *ItemError
		if !errors.As(keys[k], &ie) || ie.Status != 400 || ie.Type != "mapper_parsing_exception" {
			t.Fatalf("record %s: error %v, want the server's 400 mapper_parsing_exception", k, keys[k])
		}
		if ie.Index != index || ie.ID != k || ie.Reason == "" {
			t.Fatalf("record %s: %+v", k, ie)
		}
	}
	if !errors.Is(keys["70"], connectors.ErrBadRecord) {
		t.Fatalf("broken JSON: %v", keys["70"])
	}
	if st := ix.Stats(); st.Retried != 0 {
		t.Fatalf("non-retryable errors were retried: %+v", st)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v: bad documents stalled the batch", el)
	}
}
