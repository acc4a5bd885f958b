package elasticsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors/elasticsearch/searchtest"
)

// The compatibility matrix: the servers the sink's other tests do not run
// on (they use Elasticsearch 7.17). Elasticsearch 8 sends X-Elastic-Product
// and needs no compatibility header; OpenSearch sends no product header,
// so the sink identifies it (GET /) and the v8 client then talks to it like
// to Elasticsearch. Each flavor is one shared server per test process.
var compatFlavors = []searchtest.Flavor{searchtest.Elasticsearch8, searchtest.OpenSearch2}

func forFlavors(t *testing.T, fn func(t *testing.T, f searchtest.Flavor, s *searchtest.Server)) {
	for _, f := range compatFlavors {
		t.Run(string(f), func(t *testing.T) { fn(t, f, server(t, f)) })
	}
}

// Index, delete and external_gte versions, gzip bodies; and how the sink
// knows the server.
func TestCompatIndexDeleteAndVersions(t *testing.T) {
	forFlavors(t, func(t *testing.T, f searchtest.Flavor, s *searchtest.Server) {
		index := indexName(t)
		ix, d := newIndexer(t, s, index, func(c *Config) {
			c.VersionType = "external_gte"
			c.VersionField = "v"
			c.VersionHeader = "v"
			c.Compress = true
		})
		var rs []*kgo.Record
		for i := 0; i < 300; i++ {
			rs = append(rs, rec(fmt.Sprint(i), jsonf(`{"v":%d,"i":%d}`, 2, i)))
		}
		addFlush(t, ix, rs...)
		del := tombstone("7")
		del.Headers = []kgo.RecordHeader{{Key: "v", Value: []byte("3")}}
		addFlush(t, ix, rec("8", `{"v":1,"i":-1}`), del)
		if n := count(t, s, index); n != 299 {
			t.Fatalf("count %d, want 299", n)
		}
		if got := doc(t, s, index, "8"); got["i"] != float64(8) {
			t.Fatalf("8 = %v: an older version overwrote it", got)
		}
		// A stale delete (version 1 < 2) neither deletes nor fails.
		stale := tombstone("9")
		stale.Headers = []kgo.RecordHeader{{Key: "v", Value: []byte("1")}}
		addFlush(t, ix, stale)
		if doc(t, s, index, "9") == nil {
			t.Fatal("9 deleted by an older version")
		}
		info := ix.Server()
		switch f {
		case searchtest.OpenSearch2:
			if info == nil || info.Product != "opensearch" || !strings.HasPrefix(info.Version, "2.19.") {
				t.Fatalf("server identified as %+v", info)
			}
		case searchtest.Elasticsearch8:
			if info != nil { // it sends X-Elastic-Product: never asked
				t.Fatalf("Elasticsearch 8 was identified by GET / (%+v): it sends its product header", info)
			}
		}
		if d.len() != 0 {
			t.Fatalf("dead letters %v", d.errs)
		}
		if st := ix.Stats(); st.Stored != 303 || st.Retried != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Data streams: create op, @timestamp added from the event time when the
// document lacks it; re-delivery with the same _id does not duplicate.
// Elasticsearch 8 creates the stream from the template in its core server.
func TestCompatDataStream(t *testing.T) {
	forFlavors(t, func(t *testing.T, f searchtest.Flavor, s *searchtest.Server) {
		stream := "weir-ds-logs-app"
		s.MustDo(t, "PUT", "/_index_template/weir-ds", []byte(`{"index_patterns":["weir-ds-*"],"priority":5,"data_stream":{},
			"template":{"settings":{"number_of_shards":1,"number_of_replicas":0}}}`))
		ix, d := newIndexer(t, s, "weir-ds-logs-%{[app]}", func(c *Config) { c.DataStream = true })
		at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
		var rs []*kgo.Record
		for i := 0; i < 100; i++ {
			r := rec(fmt.Sprint("id-", i), jsonf(`{"app":"app","msg":"m%d"}`, i))
			r.Timestamp = at
			if i == 0 {
				r.Value = []byte(`{"app":"app","msg":"own","@timestamp":"2020-01-01T00:00:00Z"}`)
			}
			rs = append(rs, r)
		}
		addFlush(t, ix, rs...)
		addFlush(t, ix, rs[:10]...) // re-delivery: 409 on create means it is there
		if n := count(t, s, stream); n != 100 {
			t.Fatalf("count %d, want 100", n)
		}
		b := s.MustDo(t, "GET", "/"+stream+"/_search?q=msg:m5", nil)
		var res struct {
			Hits struct {
				Hits []struct {
					Index  string         `json:"_index"`
					Source map[string]any `json:"_source"`
				}
			}
		}
		json.Unmarshal(b, &res)
		if len(res.Hits.Hits) != 1 || res.Hits.Hits[0].Source["@timestamp"] != "2024-05-06T07:08:09Z" ||
			!strings.HasPrefix(res.Hits.Hits[0].Index, ".ds-"+stream) {
			t.Fatalf("search: %s", b)
		}
		b = s.MustDo(t, "GET", "/"+stream+"/_search?q=msg:own", nil)
		if !strings.Contains(string(b), `"@timestamp":"2020-01-01T00:00:00Z"`) {
			t.Fatalf("own @timestamp replaced: %s", b)
		}
		// An unparsable @timestamp is the server's 400: dead-lettered.
		bad := rec("bad", `{"app":"app","@timestamp":"not a date"}`)
		addFlush(t, ix, bad)
		var ie *ItemError
		if d.len() != 1 || !errors.As(d.errs[0], &ie) || ie.Status != 400 || ie.Action != "create" {
			t.Fatalf("dead letters %v, want the server's 400 for a bad @timestamp", d.errs)
		}
		if st := ix.Stats(); st.Stored != 110 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Rejected documents are dead-lettered with the server's error, whose type
// differs by server: Elasticsearch 8 says document_parsing_exception where
// 7.x and OpenSearch say mapper_parsing_exception.
func TestCompatMappingConflicts(t *testing.T) {
	forFlavors(t, func(t *testing.T, f searchtest.Flavor, s *searchtest.Server) {
		index := indexName(t)
		s.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0},
			"mappings":{"properties":{"n":{"type":"long"}}}}`))
		ix, d := newIndexer(t, s, index, nil)
		addFlush(t, ix, rec("a", `{"n":1}`), rec("b", `{"n":"not a number"}`), rec("c", `{"n":3}`))
		if n := count(t, s, index); n != 2 {
			t.Fatalf("count %d, want 2", n)
		}
		want := map[searchtest.Flavor]string{
			searchtest.Elasticsearch8: "document_parsing_exception",
			searchtest.OpenSearch2:    "mapper_parsing_exception",
		}[f]
		var ie *ItemError
		if d.len() != 1 || !errors.As(d.errs[0], &ie) || ie.Status != 400 || ie.Type != want || ie.ID != "b" ||
			ie.Index != index || ie.Reason == "" {
			t.Fatalf("dead letters %v, want the server's 400 %s", d.errs, want)
		}
		if st := ix.Stats(); st.Retried != 0 {
			t.Fatalf("a 400 was retried: %+v", st)
		}
	})
}
